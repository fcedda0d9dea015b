#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process whose stdin, stdout and stderr are pipes to this one:
/// what `nextpage replay` and the `NextPageClient` library start nextpage as.
/// The child gets only those three descriptors (every pipe end is
/// close-on-exec; the child's ends are dup2'ed to 0, 1, 2).
public struct PipedChild: Sendable {
    public let pid: pid_t
    /// The write end of the child's stdin.
    public let input: Int32
    /// The read end of the child's stdout.
    public let output: Int32
    /// The read end of the child's stderr.
    public let errors: Int32

    /// Why a child could not be started; each carries the `errno` value.
    public enum Failure: Error, Sendable {
        case pipes(Int32)
        case spawn(Int32)
        /// A `directory` was asked for where `posix_spawn_file_actions_addchdir_np` is missing.
        case directoryUnsupported
    }

    /// Whether `spawn` can start a child in another directory here.
    public static var canChangeDirectory: Bool { spawnAddChdir != nil }

    /// Starts `executable` with `arguments` (argv[0] is `executable`), in
    /// `directory` when given, with `environment` (else this process's). With
    /// `searchPath`, an `executable` without `/` is looked up on `PATH`.
    public static func spawn(
        executable: String, arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        searchPath: Bool
    ) throws(Failure) -> PipedChild {
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1], errorsFromChild: [Int32] = [-1, -1]
        guard makePipe(&toChild), makePipe(&fromChild), makePipe(&errorsFromChild) else {
            let code = errno
            for fd in toChild + fromChild + errorsFromChild where fd >= 0 { close(fd) }
            throw .pipes(code)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorsFromChild[1], 2)
        if let directory {
            guard let addChdir = spawnAddChdir else {
                for fd in toChild + fromChild + errorsFromChild { close(fd) }
                throw .directoryUnsupported
            }
            _ = directory.withCString { addChdir(&actions, $0) }
        }
        var cArguments: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let cEnvironment: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            for pointer in cArguments { free(pointer) }
            for pointer in cEnvironment ?? [] { free(pointer) }
        }
        var pid: pid_t = 0
        let spawn = searchPath ? posix_spawnp : posix_spawn
        let result: Int32
        if var cEnvironment {
            result = spawn(&pid, executable, &actions, nil, &cArguments, &cEnvironment)
        } else {
            result = spawn(&pid, executable, &actions, nil, &cArguments, environ)
        }
        for fd in [toChild[0], fromChild[1], errorsFromChild[1]] { close(fd) }
        guard result == 0 else {
            for fd in [toChild[1], fromChild[0], errorsFromChild[0]] { close(fd) }
            throw .spawn(result)
        }
        return PipedChild(pid: pid, input: toChild[1], output: fromChild[0], errors: errorsFromChild[0])
    }
}

/// A pipe whose ends are close-on-exec.
private func makePipe(_ fds: inout [Int32]) -> Bool {
    guard pipe(&fds) == 0 else { return false }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return true
}

/// glibc's posix_spawn_file_actions_addchdir_np (a GNU extension Swift does not import).
private let spawnAddChdir: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32).self)
}()
