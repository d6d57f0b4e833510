// libFuzzer entry point for the protobuf binary decoder.
//
// Built by scripts/fuzz-protobuf into one module with the runtime (Sources/PitlaneProtobuf)
// and the test protos' generated code, not through Package.swift. Each input is decoded as
// several message types; whatever decodes must encode (with encodedSize() agreeing) and decode
// again to the same bytes. Anything else is a crash for libFuzzer to report: a trap, an
// AddressSanitizer finding, a decoding error that is not a ProtobufDecodingError.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    roundTrip(Pitlane_Test_Proto3_AllTypes.self, input)
    roundTrip(Pitlane_Test_Proto2_Proto2Types.self, input)
    roundTrip(Pitlane_Test_Editions_EditionTypes.self, input)
    roundTrip(Pitlane_Test_Edition2023_Edition2023Types.self, input)
    roundTrip(ListRacesResponse.self, input)
    roundTrip(FollowRaceResponse.self, input)
    roundTrip(Google_Protobuf_Struct.self, input)
    return 0
}

/// Decodes `input` as `M` (partial, so messages missing required fields still reach the
/// encoder), then checks that the encoding is consistent and stable.
func roundTrip<M: Message>(_ type: M.Type, _ input: UnsafeRawBufferPointer) {
    var message = M()
    do {
        try message.merge(from: input, partial: true)
    } catch is ProtobufDecodingError {
        return
    } catch {
        fatalError("\(M.protoMessageName): decoding threw \(error), not a ProtobufDecodingError")
    }
    // Non-partial decoding must agree with isInitialized.
    var strict = M()
    let strictDecodes = (try? strict.merge(from: input)) != nil
    precondition(strictDecodes == message.isInitialized, "\(M.protoMessageName): strict decoding disagrees with isInitialized")

    // Deterministic, so map entries come out in the same order both times.
    let options = EncodingOptions(deterministic: true)
    let first = encode(message, options)
    precondition(first.count == message.encodedSize(), "\(M.protoMessageName): encodedSize() differs from the encoding")
    let again: M
    do {
        again = try M(serializedBytes: first, partial: true)
    } catch {
        fatalError("\(M.protoMessageName): own encoding does not decode: \(error)")
    }
    let second = encode(again, options)
    precondition(first == second, "\(M.protoMessageName): re-encoding is not stable")
}

func encode<M: Message>(_ message: M, _ options: EncodingOptions) -> [UInt8] {
    do {
        return try message.serializedBytes(partial: true, options: options)
    } catch {
        fatalError("\(M.protoMessageName): partial encoding threw \(error)")
    }
}
