import Jansson

/// Sees every message a connection reads and writes, for recording a
/// session (`--transcript`). Calls come from the connection's dispatch loop
/// (input, framing) and from any task that sends (output); a tap must be
/// thread-safe and must not block for long.
public protocol MessageTap: Sendable {
    /// The framing the connection detected (or was told to use), once, before the first message.
    func framing(_ framing: Framing)
    /// One message body as it was framed, before it is parsed (it may not be JSON).
    func incoming(_ body: [UInt8])
    /// One message (or batch reply) as it is handed to the writer.
    func outgoing(_ message: RawJSON)
    /// A message of `size` bytes, over `--max-message-bytes`, skipped unread.
    func tooLarge(size: Int)
}

extension MessageTap {
    public func tooLarge(size: Int) {}
}
