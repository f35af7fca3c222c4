//! The fixed-size parts of NBD messages, laid out as on the wire: big-endian fields in
//! `#[repr(C)]` structs of unaligned integers, so zerocopy checks at compile time that each
//! has the protocol's size and no padding, and reads or writes it without hand-made offsets.

use zerocopy::byteorder::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The server's greeting: `NBDMAGIC`, `IHAVEOPT`, handshake flags.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Greeting {
    pub(crate) nbdmagic: U64,
    pub(crate) ihaveopt: U64,
    pub(crate) flags: U16,
}

/// A client option's header: `IHAVEOPT`, option, data length.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct OptionHeader {
    pub(crate) magic: U64,
    pub(crate) option: U32,
    pub(crate) len: U32,
}

/// An option reply's header: magic, option, reply type, data length.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct OptionReply {
    pub(crate) magic: U64,
    pub(crate) option: U32,
    pub(crate) reply: U32,
    pub(crate) len: U32,
}

/// The reply to `NBD_OPT_EXPORT_NAME` (before the optional 124 zero bytes).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ExportNameReply {
    pub(crate) size: U64,
    pub(crate) flags: U16,
}

/// `NBD_INFO_EXPORT`: size and transmission flags.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct InfoExport {
    pub(crate) info: U16,
    pub(crate) size: U64,
    pub(crate) flags: U16,
}

/// `NBD_INFO_BLOCK_SIZE`: minimum, preferred and maximum block sizes.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct InfoBlockSize {
    pub(crate) info: U16,
    pub(crate) minimum: U32,
    pub(crate) preferred: U32,
    pub(crate) maximum: U32,
}

/// A compact transmission request (`NBD_REQUEST_MAGIC`): 32-bit length.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct CompactRequest {
    pub(crate) magic: U32,
    pub(crate) flags: U16,
    pub(crate) kind: U16,
    pub(crate) cookie: U64,
    pub(crate) offset: U64,
    pub(crate) len: U32,
}

/// An extended transmission request (`NBD_EXTENDED_REQUEST_MAGIC`): 64-bit length.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ExtendedRequest {
    pub(crate) magic: U32,
    pub(crate) flags: U16,
    pub(crate) kind: U16,
    pub(crate) cookie: U64,
    pub(crate) offset: U64,
    pub(crate) len: U64,
}

/// A simple reply: magic, error, cookie.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct SimpleReply {
    pub(crate) magic: U32,
    pub(crate) error: U32,
    pub(crate) cookie: U64,
}

/// A structured reply chunk's header: 32-bit payload length.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct StructuredReply {
    pub(crate) magic: U32,
    pub(crate) flags: U16,
    pub(crate) kind: U16,
    pub(crate) cookie: U64,
    pub(crate) len: U32,
}

/// An extended reply chunk's header: the request's offset and a 64-bit payload length.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ExtendedReply {
    pub(crate) magic: U32,
    pub(crate) flags: U16,
    pub(crate) kind: U16,
    pub(crate) cookie: U64,
    pub(crate) offset: U64,
    pub(crate) len: U64,
}

/// The payload of `NBD_REPLY_TYPE_OFFSET_HOLE`.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct OffsetHole {
    pub(crate) offset: U64,
    pub(crate) len: U32,
}

/// The start of an error chunk's payload (the message follows).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ErrorHead {
    pub(crate) error: U32,
    pub(crate) message_len: U16,
}

/// A descriptor of `NBD_REPLY_TYPE_BLOCK_STATUS`.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Descriptor {
    pub(crate) len: U32,
    pub(crate) flags: U32,
}

/// The start of `NBD_REPLY_TYPE_BLOCK_STATUS_EXT`'s payload (the descriptors follow).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct BlockStatusExtHead {
    pub(crate) context: U32,
    pub(crate) count: U32,
}

/// A descriptor of `NBD_REPLY_TYPE_BLOCK_STATUS_EXT`.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct DescriptorExt {
    pub(crate) len: U64,
    pub(crate) flags: U64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn sizes_are_the_protocols() {
        assert_eq!(size_of::<Greeting>(), 18);
        assert_eq!(size_of::<OptionHeader>(), 16);
        assert_eq!(size_of::<OptionReply>(), 20);
        assert_eq!(size_of::<ExportNameReply>(), 10);
        assert_eq!(size_of::<InfoExport>(), 12);
        assert_eq!(size_of::<InfoBlockSize>(), 14);
        assert_eq!(size_of::<CompactRequest>(), 28);
        assert_eq!(size_of::<ExtendedRequest>(), 32);
        assert_eq!(size_of::<SimpleReply>(), 16);
        assert_eq!(size_of::<StructuredReply>(), 20);
        assert_eq!(size_of::<ExtendedReply>(), 32);
        assert_eq!(size_of::<OffsetHole>(), 12);
        assert_eq!(size_of::<ErrorHead>(), 6);
        assert_eq!(size_of::<Descriptor>(), 8);
        assert_eq!(size_of::<BlockStatusExtHead>(), 8);
        assert_eq!(size_of::<DescriptorExt>(), 16);
    }
}
