//! The repository directory: the fragment store (`store`), the statistics
//! counters (`stats`) and the size accounting that lets builds evict
//! (`size`).

pub mod dictionary;
pub mod fsx;
pub mod identity;
pub mod index;
pub mod remote;
pub mod resp;
pub mod size;
pub mod stats;
pub mod storage;
pub mod store;
pub mod tiered;
pub mod trust;

/// What the zstd frame `frame` holds, when its header says it is at most
/// `limit` bytes; `None` for a damaged frame, one that does not say its
/// size, or a larger one. Every compressed read of the repository (the
/// remote tier's values, the unit cache's results and manifests) is
/// bounded this way.
pub fn decompress_bounded(frame: &[u8], limit: u64) -> Option<Vec<u8>> {
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n <= limit => usize::try_from(n).ok()?,
        _ => return None,
    };
    zstd::bulk::decompress(frame, size).ok()
}
