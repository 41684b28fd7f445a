//! One 2-D 5-point Jacobi step as a range kernel, for the flow test files.

use ember::flow::{map, Buffer, Flow};

/// Submits one Jacobi step from `src` to `dst` (both `n` × `n`; the border is copied) as a
/// command group labelled `label`, split into `chunks` chunks if given.
pub fn submit_step(
    flow: &Flow,
    src: &Buffer<f64, 2>,
    dst: &Buffer<f64, 2>,
    n: usize,
    label: String,
    chunks: Option<usize>,
) {
    flow.submit(|cg| {
        let src = src.read(cg, map::neighbourhood([1, 1]));
        let dst = dst.write(cg, map::one_to_one());
        if let Some(c) = chunks {
            cg.chunks(c);
        }
        cg.label(label).parallel_for([n, n], move |chunk| {
            let (src, mut dst) = (chunk.read(&src), chunk.write(&dst));
            for [i, j] in chunk.items() {
                dst[[i, j]] = if i == 0 || j == 0 || i + 1 == n || j + 1 == n {
                    src[[i, j]]
                } else {
                    0.25 * (src[[i - 1, j]] + src[[i + 1, j]] + src[[i, j - 1]] + src[[i, j + 1]])
                };
            }
        });
    })
    .unwrap();
}
