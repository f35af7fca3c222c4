//! `NBD_CMD_*`: the transmission commands, as a type.

/// A transmission command (`NBD_CMD_*`, the request's 16-bit type field).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Command {
    /// `NBD_CMD_READ`.
    Read = 0,
    /// `NBD_CMD_WRITE`.
    Write = 1,
    /// `NBD_CMD_DISC`: the client disconnects.
    Disc = 2,
    /// `NBD_CMD_FLUSH`.
    Flush = 3,
    /// `NBD_CMD_TRIM`.
    Trim = 4,
    /// `NBD_CMD_CACHE`.
    Cache = 5,
    /// `NBD_CMD_WRITE_ZEROES`.
    WriteZeroes = 6,
    /// `NBD_CMD_BLOCK_STATUS`.
    BlockStatus = 7,
}

/// A command type this server does not know (the raw value); answered with `NBD_EINVAL`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UnknownCommand(pub u16);

impl TryFrom<u16> for Command {
    type Error = UnknownCommand;
    fn try_from(raw: u16) -> Result<Self, UnknownCommand> {
        Ok(match raw {
            0 => Command::Read,
            1 => Command::Write,
            2 => Command::Disc,
            3 => Command::Flush,
            4 => Command::Trim,
            5 => Command::Cache,
            6 => Command::WriteZeroes,
            7 => Command::BlockStatus,
            _ => return Err(UnknownCommand(raw)),
        })
    }
}

impl From<Command> for u16 {
    fn from(c: Command) -> u16 {
        c as u16
    }
}

impl Command {
    /// The protocol's name without its prefix ("READ", "WRITE_ZEROES"), for logs.
    pub fn name(self) -> &'static str {
        match self {
            Command::Read => "READ",
            Command::Write => "WRITE",
            Command::Disc => "DISC",
            Command::Flush => "FLUSH",
            Command::Trim => "TRIM",
            Command::Cache => "CACHE",
            Command::WriteZeroes => "WRITE_ZEROES",
            Command::BlockStatus => "BLOCK_STATUS",
        }
    }

    /// True for the commands that change the export (refused on a read-only one).
    pub fn writes(self) -> bool {
        matches!(self, Command::Write | Command::Trim | Command::WriteZeroes)
    }
}

/// A name for a raw command type, for logs ("unknown" when it is none).
pub fn cmd_name(kind: u16) -> &'static str {
    Command::try_from(kind).map_or("unknown", Command::name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_round_trips_and_others_are_unknown() {
        for raw in 0..8u16 {
            let c = Command::try_from(raw).unwrap();
            assert_eq!(u16::from(c), raw);
        }
        assert_eq!(Command::try_from(8), Err(UnknownCommand(8)));
        assert_eq!(cmd_name(6), "WRITE_ZEROES");
        assert_eq!(cmd_name(99), "unknown");
    }
}
