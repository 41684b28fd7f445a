//! Linked LZ4 blocks: chunk i is compressed with the end of chunk i-1 as its dictionary, so
//! decoding it needs chunk i-1 decoded first — except at reset points (every `reset_every`
//! chunks), which are compressed alone and start an independent chain.
//!
//! LZ4's match window is 64 KiB, so the dictionary is the last 64 KiB of the previous chunk;
//! encoder and decoder take the same slice.

/// LZ4's match window: the most of a dictionary a block can refer to.
pub const WINDOW: usize = 64 * 1024;

/// One compressed chunk.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// The LZ4 block.
    pub data: Vec<u8>,
    /// Where its decoded bytes start in the corpus.
    pub offset: usize,
    /// Decoded length.
    pub len: usize,
    /// Whether decoding needs the previous chunk (false at reset points).
    pub linked: bool,
}

/// A corpus compressed into linked chunks.
#[derive(Clone, Debug)]
pub struct Compressed {
    pub chunks: Vec<Chunk>,
    pub chunk_size: usize,
    pub reset_every: usize,
}

impl Compressed {
    /// Total compressed bytes.
    pub fn compressed_len(&self) -> usize {
        self.chunks.iter().map(|c| c.data.len()).sum()
    }
}

/// The dictionary a chunk following `prev` is coded against.
pub fn dict_of(prev: &[u8]) -> &[u8] {
    &prev[prev.len().saturating_sub(WINDOW)..]
}

/// Whether chunk `i` starts a chain.
pub fn is_reset(i: usize, reset_every: usize) -> bool {
    i % reset_every.max(1) == 0
}

/// Splits `corpus` into `chunk_size` chunks and compresses them, linked except every
/// `reset_every` chunks.
pub fn compress(corpus: &[u8], chunk_size: usize, reset_every: usize) -> Compressed {
    let chunk_size = chunk_size.max(1);
    let chunks = corpus
        .chunks(chunk_size)
        .enumerate()
        .map(|(i, raw)| {
            let offset = i * chunk_size;
            let linked = !is_reset(i, reset_every);
            let data = if linked {
                let prev = &corpus[offset - chunk_size..offset];
                lz4_flex::block::compress_with_dict(raw, dict_of(prev))
            } else {
                lz4_flex::block::compress(raw)
            };
            Chunk {
                data,
                offset,
                len: raw.len(),
                linked,
            }
        })
        .collect();
    Compressed {
        chunks,
        chunk_size,
        reset_every: reset_every.max(1),
    }
}

/// Decodes one chunk; `prev` is the decoded previous chunk (required iff the chunk is
/// linked). A malformed block or a wrong length panics: the lab never measures a wrong
/// result.
pub fn decode(chunk: &Chunk, block: &[u8], prev: Option<&[u8]>) -> Vec<u8> {
    let out = match (chunk.linked, prev) {
        (true, Some(prev)) => {
            lz4_flex::block::decompress_with_dict(block, chunk.len, dict_of(prev))
        }
        (false, None) => lz4_flex::block::decompress(block, chunk.len),
        (true, None) => panic!("chunk at {} is linked but got no predecessor", chunk.offset),
        (false, Some(_)) => panic!("chunk at {} is a reset point", chunk.offset),
    };
    let out = out.unwrap_or_else(|e| panic!("LZ4 decode of chunk at {}: {e}", chunk.offset));
    assert_eq!(
        out.len(),
        chunk.len,
        "chunk at {} decoded to the wrong length",
        chunk.offset
    );
    out
}

/// Asserts that `decoded` (one buffer per chunk) is exactly `corpus`.
pub fn verify(corpus: &[u8], c: &Compressed, decoded: &[&[u8]]) {
    assert_eq!(
        decoded.len(),
        c.chunks.len(),
        "wrong number of decoded chunks"
    );
    for (i, (chunk, out)) in c.chunks.iter().zip(decoded).enumerate() {
        assert!(
            *out == &corpus[chunk.offset..chunk.offset + chunk.len],
            "decoded chunk {i} differs from the corpus"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::chained_decode::corpus;

    #[test]
    fn round_trips_linked_chunks_with_resets() {
        // 10 chunks of 20 KiB and a short last one; resets at 0, 4, 8.
        let data = corpus::generate(10 * 20 * 1024 + 777, 3);
        let c = compress(&data, 20 * 1024, 4);
        assert_eq!(c.chunks.len(), 11);
        let linked: Vec<bool> = c.chunks.iter().map(|k| k.linked).collect();
        for (i, l) in linked.iter().enumerate() {
            assert_eq!(*l, i % 4 != 0, "chunk {i}");
        }
        assert!(c.compressed_len() < data.len() / 2, "the corpus compresses");
        let mut out: Vec<Vec<u8>> = Vec::new();
        for (i, chunk) in c.chunks.iter().enumerate() {
            let prev = chunk.linked.then(|| out[i - 1].as_slice());
            out.push(decode(chunk, &chunk.data, prev));
        }
        let refs: Vec<&[u8]> = out.iter().map(|v| v.as_slice()).collect();
        verify(&data, &c, &refs);
        assert_eq!(out.concat(), data);
    }

    #[test]
    fn linking_helps_and_needs_the_predecessor() {
        let data = corpus::generate(8 * 16 * 1024, 5);
        let linked = compress(&data, 16 * 1024, 8);
        let alone = compress(&data, 16 * 1024, 1);
        assert!(linked.compressed_len() < alone.compressed_len());
        // Decoding a linked chunk against the wrong dictionary gives other bytes (or fails).
        let c = &linked.chunks[1];
        let wrong = vec![b'x'; 16 * 1024];
        let got = lz4_flex::block::decompress_with_dict(&c.data, c.len, dict_of(&wrong));
        assert!(got.map_or(true, |g| g != data[c.offset..c.offset + c.len]));
    }

    #[test]
    #[should_panic(expected = "differs from the corpus")]
    fn verify_catches_a_wrong_byte() {
        let data = corpus::generate(4096, 1);
        let c = compress(&data, 1024, 2);
        let mut out: Vec<Vec<u8>> = c
            .chunks
            .iter()
            .map(|k| data[k.offset..k.offset + k.len].to_vec())
            .collect();
        out[2][10] ^= 1;
        let refs: Vec<&[u8]> = out.iter().map(|v| v.as_slice()).collect();
        verify(&data, &c, &refs);
    }
}
