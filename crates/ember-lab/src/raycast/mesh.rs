//! Triangle meshes: the generated default (a displaced UV sphere), and ASCII PLY output (the
//! reader is [`super::ply`]).
//!
//! The default mesh is [`Mesh::displaced_sphere`] with [`DEFAULT_SLICES`] × [`DEFAULT_STACKS`],
//! which gives `2 · slices · (stacks − 1)` = 69,696 triangles. It is indexed, so neighbouring
//! triangles share their vertices bit for bit and the surface has no cracks. The radius is
//! displaced by a fixed sum of sines of the two sphere angles, so the surface has bumps at
//! several scales (and the BVH has something to sort out) while every run, on every machine
//! with the same float library, builds the same triangles.

use std::fs;
use std::io;
use std::ops::{Add, Mul, Sub};
use std::path::Path;

/// A point or direction in 3-D, single precision.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec3 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
}

impl Vec3 {
    /// The vector `(x, y, z)`.
    pub const fn new(x: f32, y: f32, z: f32) -> Vec3 {
        Vec3 { x, y, z }
    }

    /// The same value in all three coordinates.
    pub const fn splat(v: f32) -> Vec3 {
        Vec3 { x: v, y: v, z: v }
    }

    /// Dot product.
    #[inline(always)]
    pub fn dot(self, o: Vec3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// Cross product.
    #[inline(always)]
    pub fn cross(self, o: Vec3) -> Vec3 {
        Vec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }

    /// Euclidean length.
    pub fn length(self) -> f32 {
        self.dot(self).sqrt()
    }

    /// This vector scaled to length 1.
    pub fn normalized(self) -> Vec3 {
        self * (1.0 / self.length())
    }

    /// Component-wise minimum.
    #[inline(always)]
    pub fn min(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }

    /// Component-wise maximum.
    #[inline(always)]
    pub fn max(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }

    /// Coordinate `axis` (0 = x, 1 = y, anything else = z).
    #[inline(always)]
    pub fn axis(self, axis: usize) -> f32 {
        match axis {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f32> for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn mul(self, s: f32) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}

/// Longitude segments of the default mesh.
pub const DEFAULT_SLICES: usize = 264;
/// Latitude bands of the default mesh (`DEFAULT_STACKS + 1` rings of vertices, poles included).
pub const DEFAULT_STACKS: usize = 133;

/// An indexed triangle mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions.
    pub vertices: Vec<Vec3>,
    /// Triangles, as three indices into `vertices`.
    pub faces: Vec<[u32; 3]>,
}

impl Mesh {
    /// The default workload mesh: [`displaced_sphere`](Self::displaced_sphere) with
    /// [`DEFAULT_SLICES`] and [`DEFAULT_STACKS`] (69,696 triangles).
    pub fn default_mesh() -> Mesh {
        Mesh::displaced_sphere(DEFAULT_SLICES, DEFAULT_STACKS)
    }

    /// A UV sphere of `slices` longitude segments and `stacks` latitude bands around the
    /// origin, radius about 1, with a deterministic radial displacement of up to ±0.14.
    /// The caps are fans of one triangle per slice, every other band two per slice:
    /// `2 · slices · (stacks − 1)` triangles.
    ///
    /// # Panics
    /// If `slices < 3` or `stacks < 2`.
    pub fn displaced_sphere(slices: usize, stacks: usize) -> Mesh {
        assert!(
            slices >= 3 && stacks >= 2,
            "a sphere needs at least 3 slices and 2 stacks"
        );
        let radius = |theta: f32, phi: f32| -> f32 {
            1.0 + 0.07 * (5.0 * theta).sin() * (4.0 * phi).sin()
                + 0.04 * (11.0 * theta + 1.3).sin() * (9.0 * phi + 0.7).cos()
                + 0.02 * (23.0 * theta + 0.4).cos() * (17.0 * phi + 2.1).sin()
                + 0.01 * (41.0 * theta).sin() * (37.0 * phi + 0.3).sin()
        };
        let pi = std::f32::consts::PI;
        let mut vertices = Vec::with_capacity(2 + slices * (stacks - 1));
        // Poles: the displacement there does not depend on phi.
        vertices.push(Vec3::new(0.0, radius(0.0, 0.0), 0.0));
        for st in 1..stacks {
            let theta = pi * st as f32 / stacks as f32;
            let (s_theta, c_theta) = theta.sin_cos();
            for sl in 0..slices {
                let phi = 2.0 * pi * sl as f32 / slices as f32;
                let (s_phi, c_phi) = phi.sin_cos();
                let r = radius(theta, phi);
                vertices.push(Vec3::new(
                    r * s_theta * c_phi,
                    r * c_theta,
                    r * s_theta * s_phi,
                ));
            }
        }
        let south = vertices.len() as u32;
        vertices.push(Vec3::new(0.0, -radius(pi, 0.0), 0.0));

        let ring = |st: usize, sl: usize| (1 + (st - 1) * slices + sl % slices) as u32;
        let mut faces = Vec::with_capacity(2 * slices * (stacks - 1));
        for sl in 0..slices {
            faces.push([0, ring(1, sl + 1), ring(1, sl)]);
        }
        for st in 1..stacks - 1 {
            for sl in 0..slices {
                let (a, b) = (ring(st, sl), ring(st, sl + 1));
                let (c, d) = (ring(st + 1, sl), ring(st + 1, sl + 1));
                faces.push([a, b, d]);
                faces.push([a, d, c]);
            }
        }
        for sl in 0..slices {
            faces.push([south, ring(stacks - 1, sl), ring(stacks - 1, sl + 1)]);
        }
        Mesh { vertices, faces }
    }

    /// The triangles as vertex triples.
    pub fn triangles(&self) -> impl Iterator<Item = [Vec3; 3]> + '_ {
        self.faces.iter().map(|f| {
            [
                self.vertices[f[0] as usize],
                self.vertices[f[1] as usize],
                self.vertices[f[2] as usize],
            ]
        })
    }

    /// Writes the mesh as ASCII PLY (what [`super::ply::load`] reads). Coordinates are printed with
    /// Rust's shortest round-trip formatting, so loading the file gives the same mesh back.
    #[cfg_attr(not(test), allow(dead_code))] // the tests round-trip meshes through it
    pub fn write_ply(&self, path: &Path) -> io::Result<()> {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = write!(
            s,
            "ply\nformat ascii 1.0\nelement vertex {}\nproperty float x\nproperty float y\n\
             property float z\nelement face {}\nproperty list uchar int vertex_indices\n\
             end_header\n",
            self.vertices.len(),
            self.faces.len()
        );
        for v in &self.vertices {
            let _ = writeln!(s, "{} {} {}", v.x, v.y, v.z);
        }
        for f in &self.faces {
            let _ = writeln!(s, "3 {} {} {}", f[0], f[1], f[2]);
        }
        fs::write(path, s)
    }
}
