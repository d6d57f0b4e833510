// Pitlane's side of the protobuf codec benchmark; the C++ and Python drivers follow the same
// contract: `--payload FILE --type Race|Catalog --seconds S`, one JSON line out.
// `--count N --operation encode|decode` (this driver and the C++ one) runs exactly N operations
// untimed instead, for instruction counts: run it under callgrind with two counts and compare
// (Benchmarks/python/callgrind_per_call.py).
import Foundation
import PitlaneProtobuf

struct Options {
    var payload = ""
    var type = "Race"
    var seconds = 2.0
    var count: Int?
    var operation = "encode"

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            if flag == "--help" || flag == "-h" {
                print(
                    "usage: pitlane-protobuf-bench --payload FILE --type Race|Catalog [--seconds S] [--count N --operation encode|decode]")
                exit(0)
            }
            let value = iterator.next() ?? ""
            switch flag {
            case "--payload": payload = value
            case "--type": type = value
            case "--seconds": seconds = Double(value) ?? seconds
            case "--count": count = Int(value)
            case "--operation": operation = value
            default: fatalError("unknown flag \(flag)")
            }
        }
    }
}

/// Runs `body` in batches until `seconds` pass; returns operations per second.
func measure(seconds: Double, batch: Int, _ body: () throws -> Int) rethrows -> Double {
    var sink = 0
    let clock = ContinuousClock()
    let warmUpEnd = clock.now + .milliseconds(200)
    while clock.now < warmUpEnd {
        for _ in 0..<batch { sink &+= try body() }
    }
    let start = clock.now
    let end = start + .milliseconds(Int(seconds * 1000))
    var operations = 0
    while clock.now < end {
        for _ in 0..<batch { sink &+= try body() }
        operations += batch
    }
    let elapsed = (clock.now - start) / .seconds(1)
    // The sink keeps the optimizer from dropping the work.
    if sink == 42 { print("") }
    return Double(operations) / elapsed
}

func run<M: Message>(_ type: M.Type, payload: [UInt8], options: Options, batch: Int, count: (M) -> Int) throws {
    let message = try M(serializedBytes: payload)
    if let operations = options.count {
        // The operation is chosen once: a string comparison per operation would be counted too.
        guard ["decode", "encode"].contains(options.operation) else { fatalError("unknown operation \(options.operation)") }
        let decoding = options.operation == "decode"
        var sink = 0
        for _ in 0..<operations {
            sink &+= decoding ? count(try M(serializedBytes: payload)) : try message.serializedBytes().count
        }
        print(#"{"impl": "pitlane", "operation": "\#(options.operation)", "count": \#(operations), "sink": \#(sink)}"#)
        return
    }
    let decodeRate = try measure(seconds: options.seconds, batch: batch) {
        count(try M(serializedBytes: payload))
    }
    let encodeRate = try measure(seconds: options.seconds, batch: batch) {
        try message.serializedBytes().count
    }
    print(
        #"{"impl": "pitlane", "type": "\#(M.protoMessageName.split(separator: ".").last!)", "bytes": \#(payload.count), "decode_per_s": \#(decodeRate), "encode_per_s": \#(encodeRate)}"#
    )
}

let options = Options(CommandLine.arguments)
let payload = [UInt8](try Data(contentsOf: URL(filePath: options.payload)))
switch options.type {
case "Race": try run(Pitlane_Bench_Race.self, payload: payload, options: options, batch: 1000) { $0.drivers.count }
case "Catalog": try run(Pitlane_Bench_Catalog.self, payload: payload, options: options, batch: 10) { $0.entries.count }
default: fatalError("unknown type \(options.type)")
}
