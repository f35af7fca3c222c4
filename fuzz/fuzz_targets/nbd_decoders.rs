//! Fuzzes vecio nbd's wire decoders: request headers, option headers, client flags, and the
//! option payloads of NBD_OPT_INFO/GO and NBD_OPT_LIST/SET_META_CONTEXT. None may panic on any
//! input, and a request header that decodes must encode back to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vecio_nbd::proto::{self, OptionHeader, Request};

fuzz_target!(|data: &[u8]| {
    if let Some(b) = data.get(..proto::REQUEST_LEN) {
        let mut h = [0u8; proto::REQUEST_LEN];
        h.copy_from_slice(b);
        if let Ok(r) = Request::decode(&h) {
            assert_eq!(r.encode(), h, "request header round trip");
        }
    }
    if let Some(b) = data.get(..proto::OPTION_HEADER_LEN) {
        let mut h = [0u8; proto::OPTION_HEADER_LEN];
        h.copy_from_slice(b);
        let _ = OptionHeader::decode(&h);
    }
    if let Some(b) = data.get(..4) {
        let _ = proto::decode_client_flags([b[0], b[1], b[2], b[3]]);
    }
    let _ = proto::decode_info_request(data);
    let _ = proto::decode_meta_request(data);
});
