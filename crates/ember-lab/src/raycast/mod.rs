//! The ray-casting workload of the containers experiment: primary rays
//! from a fixed camera against a triangle mesh, through a BVH built once, in tasks of
//! [`BATCH`] rays.
//!
//! By default the mesh is a displaced UV sphere of 69,696 triangles ([`mesh`]) and the camera
//! shoots one ray through the centre of each pixel of a 100 × 100 image: 10,000 rays, a few
//! thousand of which miss the mesh. `Scene::from_ply` traces a real mesh instead, framed the
//! same way (the camera looks at the centre of its bounding box from three radii away).
//!
//! A frame is the closest hit of every ray; its result is the number of rays that hit. Each
//! ray is traced on its own, with the same `f32` operations in the same order whichever
//! thread runs it, so [`Scene::trace_all_single`], [`Scene::trace_all_rayon`] and
//! [`Scene::trace_all_ember`] return the same count, which is what the experiment checks.

pub mod bvh;
pub mod mesh;
pub mod ply;

use bvh::{Bvh, Ray};
use mesh::{Mesh, Vec3};
use ply::PlyError;
use rayon::prelude::*;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rays per task.
pub const BATCH: usize = 20;
/// Image width of the default scene, in pixels (one ray each).
pub const DEFAULT_WIDTH: usize = 100;
/// Image height of the default scene, in pixels (one ray each).
pub const DEFAULT_HEIGHT: usize = 100;

/// A mesh in its BVH plus the camera's rays.
#[derive(Clone, Debug)]
pub struct Scene {
    /// The acceleration structure over the mesh's triangles.
    pub bvh: Bvh,
    /// The primary rays, row by row from the top-left pixel.
    rays: Vec<Ray>,
}

impl Scene {
    /// The default workload: [`Mesh::default_mesh`] (69,696 triangles) and
    /// [`DEFAULT_WIDTH`] × [`DEFAULT_HEIGHT`] rays.
    pub fn default_scene() -> Scene {
        Scene::new(&Mesh::default_mesh(), DEFAULT_WIDTH, DEFAULT_HEIGHT)
    }

    /// The mesh of a PLY file, ASCII or binary (see [`ply::load`]), with
    /// [`DEFAULT_WIDTH`] × [`DEFAULT_HEIGHT`] rays.
    pub fn from_ply(path: &Path) -> Result<Scene, PlyError> {
        Ok(Scene::new(&ply::load(path)?, DEFAULT_WIDTH, DEFAULT_HEIGHT))
    }

    /// Builds the BVH over `mesh` and a `width` × `height` pinhole camera looking at the
    /// centre of the mesh's bounding box, from a fixed oblique direction, three bounding-sphere
    /// radii away, with a field of view a little wider than the mesh (so that the corner rays
    /// miss it).
    pub fn new(mesh: &Mesh, width: usize, height: usize) -> Scene {
        let triangles: Vec<[Vec3; 3]> = mesh.triangles().collect();
        let bvh = Bvh::build(&triangles);

        let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for p in triangles.iter().flatten() {
            lo = lo.min(*p);
            hi = hi.max(*p);
        }
        let center = (lo + hi) * 0.5;
        let radius = triangles
            .iter()
            .flatten()
            .map(|&p| (p - center).length())
            .fold(0.0f32, f32::max)
            .max(f32::MIN_POSITIVE);
        let back = Vec3::new(0.35, 0.45, 1.0).normalized();
        let eye = center + back * (3.0 * radius);
        let forward = back * -1.0;
        let right = forward.cross(Vec3::new(0.0, 1.0, 0.0)).normalized();
        let up = right.cross(forward);
        // tan of half the field of view: the image spans 1.15 radii at the distance of the
        // centre, in both directions.
        let half = 1.15 / 3.0;
        let mut rays = Vec::with_capacity(width * height);
        for py in 0..height {
            for px in 0..width {
                let u = ((px as f32 + 0.5) / width as f32 * 2.0 - 1.0) * half;
                let v = (1.0 - (py as f32 + 0.5) / height as f32 * 2.0) * half;
                rays.push(Ray::new(eye, forward + right * u + up * v));
            }
        }
        Scene { bvh, rays }
    }

    /// Number of rays in a frame.
    pub fn rays(&self) -> usize {
        self.rays.len()
    }

    /// Number of [`BATCH`]-ray tasks in a frame (the last may be shorter).
    pub fn batches(&self) -> usize {
        self.rays.len().div_ceil(BATCH)
    }

    /// The rays of task `b`: `b·BATCH .. min((b+1)·BATCH, rays)`.
    pub fn batch(&self, b: usize) -> Range<usize> {
        let start = b * BATCH;
        start..(start + BATCH).min(self.rays.len())
    }

    /// The ray with index `i` (row-major from the top-left pixel).
    #[cfg_attr(not(test), allow(dead_code))] // the tests check rays one by one
    pub fn ray(&self, i: usize) -> &Ray {
        &self.rays[i]
    }

    /// Traces the rays with indices in `rays` and returns how many hit the mesh.
    ///
    /// # Panics
    /// If the range goes past [`rays`](Self::rays).
    pub fn trace_range(&self, rays: Range<usize>) -> u64 {
        self.rays[rays]
            .iter()
            .filter(|r| self.bvh.closest_hit(r).is_some())
            .count() as u64
    }

    /// One frame on the calling thread; the number of hits.
    pub fn trace_all_single(&self) -> u64 {
        self.trace_range(0..self.rays.len())
    }

    /// One frame on a rayon pool, a `par_iter` over the [`BATCH`]-ray tasks; the number of
    /// hits.
    pub fn trace_all_rayon(&self, pool: &rayon::ThreadPool) -> u64 {
        pool.install(|| {
            (0..self.batches())
                .into_par_iter()
                .map(|b| self.trace_range(self.batch(b)))
                .sum()
        })
    }

    /// One frame on an ember pool through [`ember::Pool::parallel_for`] over the
    /// [`BATCH`]-ray tasks (grain 1: one task per batch; the calling thread helps); the
    /// number of hits.
    pub fn trace_all_ember(&self, pool: &ember::Pool) -> u64 {
        let hits = AtomicU64::new(0);
        pool.parallel_for(0..self.batches(), 1, |b| {
            hits.fetch_add(self.trace_range(self.batch(b)), Ordering::Relaxed);
        });
        hits.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::bvh::{Hit, Triangle};
    use super::*;
    use std::time::Instant;

    /// 2 · 32 · 16 = 1,024 triangles.
    fn small_mesh() -> Mesh {
        Mesh::displaced_sphere(32, 17)
    }

    fn small_scene() -> Scene {
        Scene::new(&small_mesh(), 20, 20)
    }

    fn brute_force(tris: &[Triangle], ray: &Ray) -> Option<Hit> {
        let mut best: Option<Hit> = None;
        for (i, t) in tris.iter().enumerate() {
            if let Some(t) = t.intersect(ray, best.map_or(f32::INFINITY, |h| h.t)) {
                best = Some(Hit { t, tri: i as u32 });
            }
        }
        best
    }

    /// A directory of its own under the system temp dir, removed on drop.
    struct TempDir(std::path::PathBuf);
    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "ember-lab-raycast-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn default_mesh_size() {
        // Counting only: building the full mesh in a debug test is cheap, tracing it is not.
        let m = Mesh::default_mesh();
        assert_eq!(m.faces.len(), 69_696);
        assert_eq!(small_mesh().faces.len(), 1_024);
        // Indexed and closed: every edge is shared by exactly two triangles.
        let mut edges = std::collections::HashMap::new();
        for f in &small_mesh().faces {
            for k in 0..3 {
                let (a, b) = (f[k], f[(k + 1) % 3]);
                *edges.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        assert!(edges.values().all(|&n| n == 2));
    }

    #[test]
    fn bvh_matches_brute_force() {
        let mesh = small_mesh();
        let scene = small_scene();
        let tris: Vec<Triangle> = mesh.triangles().map(Triangle::new).collect();
        let mut hits = 0u64;
        for i in 0..scene.rays() {
            let ray = scene.ray(i);
            let fast = scene.bvh.closest_hit(ray);
            let slow = brute_force(&tris, ray);
            match (fast, slow) {
                (None, None) => {}
                (Some(f), Some(s)) => {
                    hits += 1;
                    // Same triangle test on the same data: bit-identical distance. On a
                    // shared edge two triangles may tie; then either index is right.
                    assert_eq!(f.t.to_bits(), s.t.to_bits(), "ray {i}: {f:?} vs {s:?}");
                    if f.tri != s.tri {
                        let other = tris[f.tri as usize].intersect(ray, f32::INFINITY);
                        assert_eq!(other, Some(s.t), "ray {i}: {f:?} vs {s:?}");
                    }
                }
                _ => panic!("ray {i}: bvh {fast:?}, brute force {slow:?}"),
            }
        }
        // The camera frames the mesh with some margin: most rays hit, the corners miss.
        assert!(
            hits > scene.rays() as u64 / 2 && hits < scene.rays() as u64,
            "{hits} hits"
        );
        assert_eq!(hits, scene.trace_all_single());
    }

    #[test]
    fn bvh_random_rays_match_brute_force() {
        // Rays from inside and outside the mesh in all directions (a xorshift stream), not
        // just the camera's.
        let mesh = small_mesh();
        let tris: Vec<Triangle> = mesh.triangles().map(Triangle::new).collect();
        let bvh = Bvh::build(&mesh.triangles().collect::<Vec<_>>());
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
        };
        for i in 0..300 {
            let ray = Ray::new(
                Vec3::new(next(), next(), next()),
                Vec3::new(next(), next(), next()),
            );
            let (f, s) = (bvh.closest_hit(&ray), brute_force(&tris, &ray));
            assert_eq!(
                f.map(|h| h.t.to_bits()),
                s.map(|h| h.t.to_bits()),
                "ray {i}"
            );
        }
    }

    #[test]
    fn batches_cover_every_ray_once() {
        let scene = small_scene();
        assert_eq!(scene.batches(), 20);
        let mut next = 0;
        for b in 0..scene.batches() {
            let r = scene.batch(b);
            assert_eq!(r.start, next);
            assert!(r.len() <= BATCH && !r.is_empty());
            next = r.end;
        }
        assert_eq!(next, scene.rays());
        let odd = Scene::new(&small_mesh(), 7, 3);
        assert_eq!(odd.batches(), 2);
        assert_eq!(odd.batch(1), 20..21);
    }

    #[test]
    fn single_rayon_ember_agree() {
        let scene = small_scene();
        let single = scene.trace_all_single();
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let ember = ember::Pool::builder().threads(2).build().unwrap();
        for _ in 0..3 {
            assert_eq!(scene.trace_all_rayon(&rayon), single);
            assert_eq!(scene.trace_all_ember(&ember), single);
        }
    }

    #[test]
    fn ply_round_trip() {
        let dir = TempDir::new("rt");
        let path = dir.0.join("tiny.ply");
        let mesh = Mesh::displaced_sphere(6, 4);
        mesh.write_ply(&path).unwrap();
        let back = ply::load(&path).unwrap();
        assert_eq!(back, mesh);

        // Extra properties, comments, an extra element and a quad (split into two triangles).
        let text = "ply\nformat ascii 1.0\ncomment hand-made\nelement vertex 4\n\
                    property float x\nproperty float y\nproperty float z\nproperty uchar red\n\
                    element face 1\nproperty list uchar int vertex_indices\n\
                    element edge 1\nproperty int vertex1\nproperty int vertex2\nend_header\n\
                    0 0 0 255\n1 0 0 255\n1 1 0 255\n0 1 0 255\n4 0 1 2 3\n0 1\n";
        let quad = dir.0.join("quad.ply");
        std::fs::write(&quad, text).unwrap();
        let m = ply::load(&quad).unwrap();
        assert_eq!(m.vertices.len(), 4);
        assert_eq!(m.faces, vec![[0, 1, 2], [0, 2, 3]]);
        let scene = Scene::from_ply(&quad).unwrap();
        assert_eq!(scene.rays(), DEFAULT_WIDTH * DEFAULT_HEIGHT);
        assert!(scene.trace_all_single() > 0);
    }

    #[test]
    fn ply_errors_are_clear() {
        let dir = TempDir::new("err");
        let bin = dir.0.join("bin.ply");
        let mut bytes = b"ply\nformat binary_little_endian 1.0\nelement vertex 1\n\
                          property float x\nproperty float y\nproperty float z\nend_header\n"
            .to_vec();
        bytes.extend_from_slice(&[0, 0, 128, 63, 0, 0, 0, 0, 0, 0, 0, 0, 0xff]);
        std::fs::write(&bin, bytes).unwrap();
        // One vertex, no face element: read, then refused for having no faces.
        let msg = ply::load(&bin).unwrap_err().to_string();
        assert!(msg.contains("no faces"), "{msg}");

        let bad = dir.0.join("bad.ply");
        std::fs::write(
            &bad,
            "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n\
             property float z\nelement face 1\nproperty list uchar int vertex_indices\n\
             end_header\n0 0 0\n3 0 1 2\n",
        )
        .unwrap();
        let msg = ply::load(&bad).unwrap_err().to_string();
        assert!(msg.contains("out of range"), "{msg}");
        let missing = ply::load(&dir.0.join("none.ply")).unwrap_err();
        assert!(matches!(missing, PlyError::Io(_)), "{missing:?}");
    }

    /// Release timing of the full workload (10,000 rays, 69,696 triangles):
    /// `cargo test -p ember-lab --release raycast -- --ignored --nocapture`.
    #[test]
    #[ignore = "a benchmark: run in release with --ignored --nocapture"]
    fn raycast_bench() {
        const FRAMES: usize = 30;
        let t = Instant::now();
        let scene = Scene::default_scene();
        println!(
            "raycast: {} triangles, {} BVH nodes, {} rays, built in {:.1} ms",
            scene.bvh.triangles(),
            scene.bvh.nodes(),
            scene.rays(),
            t.elapsed().as_secs_f64() * 1e3
        );
        let median = |f: &mut dyn FnMut() -> u64| {
            let expect = f();
            let mut ms: Vec<f64> = (0..FRAMES)
                .map(|_| {
                    let t = Instant::now();
                    assert_eq!(f(), expect);
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            ms.sort_by(f64::total_cmp);
            (ms[FRAMES / 2], ms[0], ms[FRAMES - 1], expect)
        };
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let ember = ember::Pool::builder().threads(2).build().unwrap();
        let rows = [
            ("single-threaded", median(&mut || scene.trace_all_single())),
            (
                "rayon (2 threads)",
                median(&mut || scene.trace_all_rayon(&rayon)),
            ),
            (
                "ember (2 threads)",
                median(&mut || scene.trace_all_ember(&ember)),
            ),
        ];
        for (name, (med, min, max, hits)) in rows {
            println!(
                "raycast: {name:<18} {med:7.3} ms/frame (min {min:.3}, max {max:.3}), {hits} hits"
            );
        }
        assert!(rows.iter().all(|r| r.1 .3 == rows[0].1 .3));
    }
}
