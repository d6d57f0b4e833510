import Glibc

/// The few Linux calls that Swift's `Glibc` module does not import: it includes neither
/// `<sys/epoll.h>` nor `<sys/eventfd.h>`, and it is built without `_GNU_SOURCE`, which hides
/// `accept4` and `pthread_setname_np`.
///
/// They are bound by name through `dlsym` with C calling convention, which is exact for these
/// integer-and-pointer signatures. Constants and the `epoll_event` layout are the values from
/// the glibc headers (checked with a C compiler on x86_64 Debian 12). A system-library shim
/// (`#include <sys/epoll.h>` and `<sys/eventfd.h>` under `_GNU_SOURCE`) would replace this file.
enum Linux {
    static let epollIn: UInt32 = 0x001
    static let epollOut: UInt32 = 0x004
    static let epollErr: UInt32 = 0x008
    static let epollHup: UInt32 = 0x010

    /// `EPOLL_CTL_ADD`, `EPOLL_CTL_DEL`, `EPOLL_CTL_MOD`.
    enum EpollOperation: Int32 {
        case add = 1
        case delete = 2
        case modify = 3
    }

    /// `struct epoll_event` is `__attribute__((packed))` on x86: a 32-bit mask then the 64-bit
    /// data word at offset 4. Elsewhere it has natural alignment.
    #if arch(x86_64) || arch(i386)
    static let epollEventStride = 12
    static let epollEventDataOffset = 4
    #else
    static let epollEventStride = 16
    static let epollEventDataOffset = 8
    #endif

    static func epollCreate() -> Int32 {
        functions.epollCreate1(O_CLOEXEC)
    }

    /// `epoll_ctl`; `events` and `data` fill the `epoll_event` (ignored by `EPOLL_CTL_DEL`).
    static func epollControl(
        _ epoll: Int32, _ operation: EpollOperation, _ fd: Int32, events: UInt32, data: UInt64
    ) -> Int32 {
        withUnsafeTemporaryAllocation(byteCount: 16, alignment: 8) { event in
            event.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            event.storeBytes(of: data, toByteOffset: epollEventDataOffset, as: UInt64.self)
            return functions.epollCtl(epoll, operation.rawValue, fd, event.baseAddress)
        }
    }

    static func epollWait(
        _ epoll: Int32, _ events: borrowing EpollEventBuffer, timeoutMilliseconds: Int32
    ) -> Int32 {
        functions.epollWait(epoll, events.storage.baseAddress, Int32(events.capacity), timeoutMilliseconds)
    }

    /// A non-blocking, close-on-exec eventfd with counter 0.
    static func eventFD() -> Int32 {
        functions.eventfd(0, O_CLOEXEC | O_NONBLOCK)
    }

    /// `accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC)`, so the accepted socket is
    /// never blocking or inherited across exec, without a window between two calls.
    static func acceptNonBlocking(
        _ fd: Int32,
        _ address: UnsafeMutablePointer<sockaddr>?,
        _ length: UnsafeMutablePointer<socklen_t>?
    ) -> Int32 {
        functions.accept4(fd, address, length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
    }

    /// Names the calling thread (shown by `top -H`, gdb, perf); the kernel keeps 15 bytes.
    static func setCurrentThreadName(_ name: String) {
        _ = functions.pthreadSetName(pthread_self(), String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }

    private static let functions = Functions()

    private struct Functions {
        typealias Accept4 = @convention(c) (
            Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32
        ) -> Int32

        let epollCreate1: @convention(c) (Int32) -> Int32 = symbol("epoll_create1")
        let epollCtl: @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 =
            symbol("epoll_ctl")
        let epollWait: @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32 =
            symbol("epoll_wait")
        let eventfd: @convention(c) (UInt32, Int32) -> Int32 = symbol("eventfd")
        let accept4: Accept4 = symbol("accept4")
        let pthreadSetName: @convention(c) (pthread_t, UnsafePointer<CChar>?) -> Int32 =
            symbol("pthread_setname_np")
    }

    private static func symbol<Function>(_ name: String) -> Function {
        // The main program's handle searches every loaded library, glibc included.
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else {
            fatalError("glibc does not export \(name)")
        }
        return unsafeBitCast(symbol, to: Function.self)
    }
}

/// Memory for the events one `epoll_wait` returns, read with the layout `Linux` describes.
struct EpollEventBuffer: ~Copyable {
    let capacity: Int
    fileprivate let storage: UnsafeMutableRawBufferPointer

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(byteCount: capacity * Linux.epollEventStride, alignment: 8)
    }

    deinit { storage.deallocate() }

    subscript(index: Int) -> (events: UInt32, data: UInt64) {
        let offset = index * Linux.epollEventStride
        return (
            storage.loadUnaligned(fromByteOffset: offset, as: UInt32.self),
            storage.loadUnaligned(fromByteOffset: offset + Linux.epollEventDataOffset, as: UInt64.self)
        )
    }
}
