//! Fuzzes vecio nbd's wire decoders: request headers (compact and extended), option headers,
//! client flags, the option payloads of NBD_OPT_INFO/GO and NBD_OPT_LIST/SET_META_CONTEXT, and
//! the block-status filter payload of extended headers. None may panic on any input, and a
//! request header that decodes must encode back to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vecio_nbd::proto::{self, BlockStatusFilter, Framing, OptionHeader, Request};

fuzz_target!(|data: &[u8]| {
    if let Some(b) = data.get(..proto::REQUEST_LEN) {
        let mut h = [0u8; proto::REQUEST_LEN];
        h.copy_from_slice(b);
        if let Ok(r) = Request::decode(&h) {
            assert_eq!(r.encode(), Some(h), "compact request header round trip");
            let _ = r.command();
            let _ = r.payload_len(Framing::Structured);
        }
    }
    if let Some(b) = data.get(..proto::EXTENDED_REQUEST_LEN) {
        let mut h = [0u8; proto::EXTENDED_REQUEST_LEN];
        h.copy_from_slice(b);
        if let Ok(r) = Request::decode_extended(&h) {
            assert_eq!(r.encode_extended(), h, "extended request header round trip");
            assert!(r.payload_len(Framing::Extended) <= r.len);
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
    if let Some(f) = BlockStatusFilter::decode(data) {
        assert_eq!(f.encode(), data, "block-status filter round trip");
    }
});
