//! Triangle meshes: the generated default (a displaced UV sphere) and an ASCII PLY loader.
//!
//! The default mesh is [`Mesh::displaced_sphere`] with [`DEFAULT_SLICES`] × [`DEFAULT_STACKS`],
//! which gives `2 · slices · (stacks − 1)` = 69,696 triangles. It is indexed, so neighbouring
//! triangles share their vertices bit for bit and the surface has no cracks. The radius is
//! displaced by a fixed sum of sines of the two sphere angles, so the surface has bumps at
//! several scales (and the BVH has something to sort out) while every run, on every machine
//! with the same float library, builds the same triangles.

use std::fmt;
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

    /// Writes the mesh as ASCII PLY (what [`load_ply`] reads). Coordinates are printed with
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

/// Why a PLY file could not be loaded.
#[derive(Debug)]
pub enum PlyError {
    /// The file could not be read.
    Io(io::Error),
    /// The file is binary PLY; only `format ascii 1.0` is read.
    Binary(String),
    /// The file is not well-formed ASCII PLY, or uses something this loader does not read.
    Malformed(String),
}

impl fmt::Display for PlyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlyError::Io(e) => write!(f, "cannot read the PLY file: {e}"),
            PlyError::Binary(format) => write!(
                f,
                "binary PLY (`format {format}`) is not supported: only ASCII PLY \
                 (`format ascii 1.0`) is read; convert the file first (e.g. with MeshLab or \
                 Blender)"
            ),
            PlyError::Malformed(msg) => write!(f, "malformed PLY: {msg}"),
        }
    }
}

impl std::error::Error for PlyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlyError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for PlyError {
    fn from(e: io::Error) -> Self {
        PlyError::Io(e)
    }
}

/// One `element` of the header: its name, item count and (scalar) property names; `list`
/// is true when it has a list property (only faces may).
struct Element {
    name: String,
    count: usize,
    props: Vec<String>,
    list: bool,
}

/// Loads an ASCII PLY mesh: the `vertex` element's `x`, `y`, `z` properties (others are
/// skipped) and the `face` element's index list (`vertex_indices` or `vertex_index`).
/// Polygons with more than three corners are split into a fan of triangles; other elements
/// are skipped, one line per item. Binary PLY is rejected with [`PlyError::Binary`].
pub fn load_ply(path: &Path) -> Result<Mesh, PlyError> {
    let bytes = fs::read(path)?;
    // The header is ASCII even in binary files; read it before insisting on UTF-8.
    let header_end = find(&bytes, b"end_header")
        .ok_or_else(|| PlyError::Malformed("no `end_header` line".into()))?;
    let header = String::from_utf8_lossy(&bytes[..header_end]);
    let mut lines = header.lines().map(str::trim);
    if lines.next() != Some("ply") {
        return Err(PlyError::Malformed(
            "the file does not start with `ply`".into(),
        ));
    }
    let mut elements: Vec<Element> = Vec::new();
    let mut format_seen = false;
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] | ["comment", ..] | ["obj_info", ..] => {}
            ["format", "ascii", _] => format_seen = true,
            ["format", kind, version] => {
                return Err(PlyError::Binary(format!("{kind} {version}")));
            }
            ["element", name, count] => elements.push(Element {
                name: (*name).to_string(),
                count: count
                    .parse()
                    .map_err(|_| PlyError::Malformed(format!("bad element count in `{line}`")))?,
                props: Vec::new(),
                list: false,
            }),
            ["property", "list", _, _, name] => {
                let e = elements
                    .last_mut()
                    .ok_or_else(|| PlyError::Malformed(format!("`{line}` before any element")))?;
                if e.name != "face"
                    || e.list
                    || !(*name == "vertex_indices" || *name == "vertex_index")
                {
                    return Err(PlyError::Malformed(format!(
                        "unsupported list property `{line}` in element `{}`",
                        e.name
                    )));
                }
                e.list = true;
            }
            ["property", _, name] => {
                let e = elements
                    .last_mut()
                    .ok_or_else(|| PlyError::Malformed(format!("`{line}` before any element")))?;
                if e.list {
                    return Err(PlyError::Malformed(format!(
                        "scalar property after the index list in `{}` is not supported",
                        e.name
                    )));
                }
                e.props.push((*name).to_string());
            }
            _ => return Err(PlyError::Malformed(format!("unknown header line `{line}`"))),
        }
    }
    if !format_seen {
        return Err(PlyError::Malformed("no `format` line".into()));
    }
    let body_start = header_end
        + bytes[header_end..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len() - header_end, |p| p + 1);
    let body = std::str::from_utf8(&bytes[body_start..])
        .map_err(|_| PlyError::Malformed("the body is not text".into()))?;
    let mut body_lines = body.lines().map(str::trim).filter(|l| !l.is_empty());

    let mut mesh = Mesh::default();
    let mut saw_vertex = false;
    for e in &elements {
        match e.name.as_str() {
            "vertex" => {
                saw_vertex = true;
                let pos = |axis: &str| {
                    e.props.iter().position(|p| p == axis).ok_or_else(|| {
                        PlyError::Malformed(format!("the vertex element has no `{axis}`"))
                    })
                };
                let (ix, iy, iz) = (pos("x")?, pos("y")?, pos("z")?);
                mesh.vertices.reserve(e.count);
                for n in 0..e.count {
                    let line = body_lines.next().ok_or_else(|| {
                        PlyError::Malformed(format!("file ends at vertex {n} of {}", e.count))
                    })?;
                    let mut vals = [0.0f32; 3];
                    let mut seen = 0;
                    for (k, word) in line.split_whitespace().enumerate() {
                        let slot = [ix, iy, iz].iter().position(|&i| i == k);
                        if let Some(slot) = slot {
                            vals[slot] = word.parse().map_err(|_| {
                                PlyError::Malformed(format!("bad number `{word}` in vertex {n}"))
                            })?;
                            seen += 1;
                        }
                    }
                    if seen != 3 {
                        return Err(PlyError::Malformed(format!("vertex {n} is too short")));
                    }
                    mesh.vertices.push(Vec3::new(vals[0], vals[1], vals[2]));
                }
            }
            "face" if e.list => {
                if !e.props.is_empty() {
                    return Err(PlyError::Malformed(
                        "scalar properties before the face index list are not supported".into(),
                    ));
                }
                mesh.faces.reserve(e.count);
                for n in 0..e.count {
                    let line = body_lines.next().ok_or_else(|| {
                        PlyError::Malformed(format!("file ends at face {n} of {}", e.count))
                    })?;
                    let idx: Vec<u32> = line
                        .split_whitespace()
                        .map(str::parse)
                        .collect::<Result<_, _>>()
                        .map_err(|_| PlyError::Malformed(format!("bad index in face {n}")))?;
                    let corners = *idx.first().unwrap_or(&0) as usize;
                    if corners < 3 || idx.len() < corners + 1 {
                        return Err(PlyError::Malformed(format!(
                            "face {n} is not a polygon of 3 or more corners"
                        )));
                    }
                    let poly = &idx[1..=corners];
                    for k in 1..corners - 1 {
                        mesh.faces.push([poly[0], poly[k], poly[k + 1]]);
                    }
                }
            }
            _ => {
                for _ in 0..e.count {
                    body_lines.next();
                }
            }
        }
    }
    if !saw_vertex {
        return Err(PlyError::Malformed("no vertex element".into()));
    }
    let n = mesh.vertices.len() as u32;
    if let Some(bad) = mesh.faces.iter().flatten().find(|&&i| i >= n) {
        return Err(PlyError::Malformed(format!(
            "face index {bad} is out of range ({n} vertices)"
        )));
    }
    if mesh.faces.is_empty() {
        return Err(PlyError::Malformed("no faces".into()));
    }
    Ok(mesh)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
