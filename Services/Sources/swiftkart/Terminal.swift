import Foundation
import Glibc
import Synchronization

/// The controlling terminal in "one key at a time, no echo" mode while following a race;
/// restored on `restore()`.
final class Terminal: Sendable {
    /// The settings to restore, once key mode is on.
    private let saved = Mutex<termios?>(nil)

    /// Whether standard input and output are a terminal the live view can draw on.
    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    func enterKeyMode() {
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return }
        saved.withLock { $0 = original }
        write("\u{1B}[?25l")  // hide the cursor
    }

    func restore() {
        guard var original = saved.withLock({ $0.take() }) else { return }
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
        write("\u{1B}[?25h\n")
    }

    /// Clears the screen and draws `screen` from the top left.
    func draw(_ screen: String) {
        write("\u{1B}[H\u{1B}[2J" + screen.replacingOccurrences(of: "\n", with: "\r\n"))
    }

    func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Key presses, read on a thread of their own (reading blocks).
    static func keys() -> AsyncStream<UInt8> {
        let (stream, continuation) = AsyncStream.makeStream(of: UInt8.self)
        Thread {
            var byte: UInt8 = 0
            while Glibc.read(STDIN_FILENO, &byte, 1) == 1 {
                if case .terminated = continuation.yield(byte) { return }
            }
            continuation.finish()
        }.start()
        return stream
    }
}
