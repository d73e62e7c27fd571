//! Which answers go out compressed, for the API's router and the reference at `/docs`.

use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};

/// Answers of the API over 1 KB go out compressed (gzip or br, as the client's
/// `Accept-Encoding` prefers): a 65 KB LiveState is a few KB on a venue's Wi-Fi. Smaller
/// ones are not worth the work. Socket.IO and uploaded files are outside the API's router.
pub(super) fn compression() -> CompressionLayer<impl Predicate> {
    let worth_it = SizeAbove::new(COMPRESS_ABOVE)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE);
    CompressionLayer::new().gzip(true).br(true).compress_when(worth_it)
}

/// Bytes of body from which an answer is compressed.
const COMPRESS_ABOVE: u64 = 1024;
