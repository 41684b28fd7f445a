//! A PLY reader for triangle meshes, ASCII and binary (little- and big-endian), as mesh tools
//! write them (the Stanford bunny, MeshLab, Blender).
//!
//! Why not a crate: the maintained PLY crate (`ply-rs-bw`) is edition 2024 and needs Rust
//! 1.85–1.87, newer than the workspace's `rust-version`, which the lab raises only for a peer.
//!
//! What is read: the `vertex` element's `x`, `y`, `z` (any numeric type; other properties
//! skipped) and the `face` element's index list (`vertex_indices` or `vertex_index`; other
//! properties skipped). Polygons with more than three corners are split into a fan of
//! triangles; other elements are skipped whole.

use super::mesh::{Mesh, Vec3};
use std::fmt;
use std::io;
use std::path::Path;

/// Why a PLY file could not be loaded.
#[derive(Debug)]
pub enum PlyError {
    /// The file could not be read.
    Io(io::Error),
    /// The file is not well-formed PLY, or uses something this reader does not read.
    Malformed(String),
}

impl fmt::Display for PlyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlyError::Io(e) => write!(f, "cannot read the PLY file: {e}"),
            PlyError::Malformed(msg) => write!(f, "malformed PLY: {msg}"),
        }
    }
}

impl std::error::Error for PlyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlyError::Io(e) => Some(e),
            PlyError::Malformed(_) => None,
        }
    }
}

impl From<io::Error> for PlyError {
    fn from(e: io::Error) -> Self {
        PlyError::Io(e)
    }
}

fn malformed(msg: impl Into<String>) -> PlyError {
    PlyError::Malformed(msg.into())
}

/// A PLY scalar type.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    fn parse(word: &str) -> Option<Scalar> {
        Some(match word {
            "char" | "int8" => Scalar::I8,
            "uchar" | "uint8" => Scalar::U8,
            "short" | "int16" => Scalar::I16,
            "ushort" | "uint16" => Scalar::U16,
            "int" | "int32" => Scalar::I32,
            "uint" | "uint32" => Scalar::U32,
            "float" | "float32" => Scalar::F32,
            "double" | "float64" => Scalar::F64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }
}

#[derive(Debug)]
enum Kind {
    Scalar(Scalar),
    List { count: Scalar, item: Scalar },
}

#[derive(Debug)]
struct Property {
    name: String,
    kind: Kind,
}

#[derive(Debug)]
struct Element {
    name: String,
    count: usize,
    props: Vec<Property>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Ascii,
    Binary { big_endian: bool },
}

/// The values of the body, in order, whatever the encoding.
enum Values<'a> {
    Ascii(std::str::SplitAsciiWhitespace<'a>),
    Binary { bytes: &'a [u8], big_endian: bool },
}

impl Values<'_> {
    /// The next value, read as `ty`; `what` names it for an error.
    fn next(&mut self, ty: Scalar, what: &dyn Fn() -> String) -> Result<f64, PlyError> {
        match self {
            Values::Ascii(words) => {
                let word = words
                    .next()
                    .ok_or_else(|| malformed(format!("the file ends at {}", what())))?;
                word.parse::<f64>()
                    .map_err(|_| malformed(format!("bad number `{word}` at {}", what())))
            }
            Values::Binary { bytes, big_endian } => {
                let n = ty.size();
                if bytes.len() < n {
                    return Err(malformed(format!("the file ends at {}", what())));
                }
                let (raw, rest) = bytes.split_at(n);
                *bytes = rest;
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(raw);
                if *big_endian {
                    b[..n].reverse();
                }
                Ok(match ty {
                    Scalar::I8 => f64::from(b[0] as i8),
                    Scalar::U8 => f64::from(b[0]),
                    Scalar::I16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
                    Scalar::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
                    Scalar::I32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    Scalar::U32 => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    Scalar::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    Scalar::F64 => f64::from_le_bytes(b),
                })
            }
        }
    }
}

/// The element a `property` line belongs to.
fn last<'e>(elements: &'e mut [Element], line: &str) -> Result<&'e mut Element, PlyError> {
    elements
        .last_mut()
        .ok_or_else(|| malformed(format!("`{line}` before any element")))
}

/// The header: format, elements, and where the body starts.
fn header(bytes: &[u8]) -> Result<(Format, Vec<Element>, usize), PlyError> {
    let end = bytes
        .windows(b"end_header".len())
        .position(|w| w == b"end_header")
        .ok_or_else(|| malformed("no `end_header` line"))?;
    let body = end
        + bytes[end..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len() - end, |p| p + 1);
    let text = String::from_utf8_lossy(&bytes[..end]);
    let mut lines = text.lines().map(str::trim);
    if lines.next() != Some("ply") {
        return Err(malformed("the file does not start with `ply`"));
    }
    let mut format = None;
    let mut elements: Vec<Element> = Vec::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let scalar = |w: &str| {
            Scalar::parse(w).ok_or_else(|| malformed(format!("unknown type `{w}` in `{line}`")))
        };
        match words.as_slice() {
            [] | ["comment", ..] | ["obj_info", ..] => {}
            ["format", kind, _version] => {
                format = Some(match *kind {
                    "ascii" => Format::Ascii,
                    "binary_little_endian" => Format::Binary { big_endian: false },
                    "binary_big_endian" => Format::Binary { big_endian: true },
                    other => return Err(malformed(format!("unknown format `{other}`"))),
                })
            }
            ["element", name, count] => elements.push(Element {
                name: (*name).to_string(),
                count: count
                    .parse()
                    .map_err(|_| malformed(format!("bad element count in `{line}`")))?,
                props: Vec::new(),
            }),
            ["property", "list", count, item, name] => {
                let kind = Kind::List {
                    count: scalar(count)?,
                    item: scalar(item)?,
                };
                last(&mut elements, line)?.props.push(Property {
                    name: (*name).to_string(),
                    kind,
                });
            }
            ["property", ty, name] => {
                let kind = Kind::Scalar(scalar(ty)?);
                last(&mut elements, line)?.props.push(Property {
                    name: (*name).to_string(),
                    kind,
                });
            }
            _ => return Err(malformed(format!("unknown header line `{line}`"))),
        }
    }
    let format = format.ok_or_else(|| malformed("no `format` line"))?;
    Ok((format, elements, body))
}

/// Loads a PLY mesh, ASCII or binary.
pub fn load(path: &Path) -> Result<Mesh, PlyError> {
    let bytes = std::fs::read(path)?;
    let (format, elements, body) = header(&bytes)?;
    let body = &bytes[body..];
    let mut values = match format {
        Format::Ascii => Values::Ascii(
            std::str::from_utf8(body)
                .map_err(|_| malformed("the body of an ASCII file is not text"))?
                .split_ascii_whitespace(),
        ),
        Format::Binary { big_endian } => Values::Binary {
            bytes: body,
            big_endian,
        },
    };
    let mut mesh = Mesh::default();
    let mut saw_vertex = false;
    for e in &elements {
        let is_vertex = e.name == "vertex";
        let is_face = e.name == "face";
        saw_vertex |= is_vertex;
        if is_vertex {
            for axis in ["x", "y", "z"] {
                if !e.props.iter().any(|p| p.name == axis) {
                    return Err(malformed(format!("the vertex element has no `{axis}`")));
                }
            }
        }
        for n in 0..e.count {
            let mut xyz = [0.0f32; 3];
            for p in &e.props {
                let what = || format!("{} {n}, property `{}`", e.name, p.name);
                match p.kind {
                    Kind::Scalar(ty) => {
                        let v = values.next(ty, &what)?;
                        if let Some(axis) = ["x", "y", "z"].iter().position(|a| *a == p.name) {
                            xyz[axis] = v as f32;
                        }
                    }
                    Kind::List { count, item } => {
                        let len = values.next(count, &what)?;
                        if !(0.0..=1e6).contains(&len) || len.fract() != 0.0 {
                            return Err(malformed(format!("bad list length {len} at {}", what())));
                        }
                        let mut idx = Vec::with_capacity(len as usize);
                        for _ in 0..len as usize {
                            let v = values.next(item, &what)?;
                            if v < 0.0 || v.fract() != 0.0 || v > f64::from(u32::MAX) {
                                return Err(malformed(format!("bad index {v} at {}", what())));
                            }
                            idx.push(v as u32);
                        }
                        let is_indices = p.name == "vertex_indices" || p.name == "vertex_index";
                        if is_face && is_indices {
                            if idx.len() < 3 {
                                return Err(malformed(format!(
                                    "face {n} is not a polygon of 3 or more corners"
                                )));
                            }
                            for k in 1..idx.len() - 1 {
                                mesh.faces.push([idx[0], idx[k], idx[k + 1]]);
                            }
                        }
                    }
                }
            }
            if is_vertex {
                mesh.vertices.push(Vec3::new(xyz[0], xyz[1], xyz[2]));
            }
        }
    }
    if !saw_vertex {
        return Err(malformed("no vertex element"));
    }
    let n = mesh.vertices.len() as u32;
    if let Some(bad) = mesh.faces.iter().flatten().find(|&&i| i >= n) {
        return Err(malformed(format!(
            "face index {bad} is out of range ({n} vertices)"
        )));
    }
    if mesh.faces.is_empty() {
        return Err(malformed("no faces"));
    }
    Ok(mesh)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary PLY as mesh tools write the Stanford bunny: float vertices with extra
    /// properties (confidence, intensity), `uchar int` face lists, in either byte order.
    fn binary(big_endian: bool) -> Vec<u8> {
        let order = if big_endian { "big" } else { "little" };
        let mut b = format!(
            "ply\nformat binary_{order}_endian 1.0\ncomment zipper output\nelement vertex 4\n\
             property float x\nproperty float y\nproperty float z\nproperty float confidence\n\
             property float intensity\nelement face 2\nproperty list uchar int vertex_indices\n\
             end_header\n"
        )
        .into_bytes();
        let f = |b: &mut Vec<u8>, v: f32| {
            b.extend(if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let i = |b: &mut Vec<u8>, v: i32| {
            b.extend(if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        for [x, y, z] in [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.5],
            [0.0, 1.0, -0.25],
        ] {
            for v in [x, y, z, 0.9, 0.5] {
                f(&mut b, v);
            }
        }
        b.push(3);
        for v in [0, 1, 2] {
            i(&mut b, v);
        }
        b.push(4);
        for v in [0, 1, 2, 3] {
            i(&mut b, v);
        }
        b
    }

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ember-lab-ply-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_binary_in_both_byte_orders() {
        for big in [false, true] {
            let path = dir().join(format!("bin-{big}.ply"));
            std::fs::write(&path, binary(big)).unwrap();
            let m = load(&path).unwrap();
            assert_eq!(m.vertices.len(), 4);
            assert_eq!(m.vertices[2], Vec3::new(1.0, 1.0, 0.5));
            assert_eq!(m.vertices[3], Vec3::new(0.0, 1.0, -0.25));
            assert_eq!(m.faces, vec![[0, 1, 2], [0, 1, 2], [0, 2, 3]]);
        }
    }

    #[test]
    fn a_truncated_binary_file_is_an_error() {
        let mut b = binary(false);
        b.truncate(b.len() - 3);
        let path = dir().join("short.ply");
        std::fs::write(&path, b).unwrap();
        let msg = load(&path).unwrap_err().to_string();
        assert!(msg.contains("ends at face 1"), "{msg}");
    }
}
