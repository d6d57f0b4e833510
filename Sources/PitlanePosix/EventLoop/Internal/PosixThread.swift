import Glibc

/// A pthread running one closure: the event loop's own thread, or a short-lived worker for a
/// blocking call such as `getaddrinfo`.
struct PosixThread: Sendable {
    private let handle: pthread_t

    /// Starts a joinable thread named `name` running `body`.
    static func spawn(
        name: String,
        _ body: @escaping @Sendable () -> Void
    ) throws(EventLoopError) -> PosixThread {
        let context = Unmanaged.passRetained(Context(name: name, body: body)).toOpaque()
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, runContext, context)
        guard result == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            throw .system("pthread_create", errno: result)
        }
        return PosixThread(handle: handle)
    }

    /// Starts a thread that nobody joins; its resources go back to the system when it ends.
    static func spawnDetached(name: String, _ body: @escaping @Sendable () -> Void) throws(EventLoopError) {
        let thread = try spawn(name: name, body)
        pthread_detach(thread.handle)
    }

    /// Waits for the thread to end. Call once, from another thread.
    func join() {
        pthread_join(handle, nil)
    }

    /// The calling thread's pthread identity (an integer on Linux).
    static var currentID: UInt {
        UInt(pthread_self())
    }

    /// The thread's entry point: takes back the context `spawn` retained and runs it.
    private static let runContext: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = {
        raw in
        let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
        Linux.setCurrentThreadName(context.name)
        context.body()
        return nil
    }

    private final class Context: Sendable {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
