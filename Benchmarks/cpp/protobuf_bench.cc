// Protobuf codec benchmark, C++ peer: Debian's libprotobuf through the plain, arena-free API.
//
// Usage: protobuf_bench --payload FILE --type Race|Catalog --seconds S
// Prints one JSON line: impl, type, bytes, decode_per_s, encode_per_s.
// With --count N --operation encode|decode instead of --seconds: exactly N operations, untimed,
// for instruction counts under callgrind.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "bench_messages.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kWarmupSeconds = 0.2;

// Every operation's result lands here, so the optimizer must keep the work.
volatile size_t sink;

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "protobuf_bench: %s\n", message.c_str());
  std::exit(1);
}

// Runs `op` in batches of `batch` until `seconds` have passed; returns operations per second.
template <typename Op>
double rate(Op op, int batch, double seconds) {
  const auto start = Clock::now();
  const std::chrono::duration<double> limit(seconds);
  long long count = 0;
  size_t total = 0;
  std::chrono::duration<double> elapsed;
  do {
    for (int i = 0; i < batch; ++i) total += op();
    count += batch;
    elapsed = Clock::now() - start;
  } while (elapsed < limit);
  sink = sink + total;
  return count / elapsed.count();
}

// Runs `op` `count` times, untimed; returns the sum of its results.
template <typename Op>
size_t repeat(Op op, long count) {
  size_t total = 0;
  for (long i = 0; i < count; ++i) total += op();
  return total;
}

// A cheap read of a decoded message; ByteSizeLong() would walk the whole message and skew decode.
size_t touch(const pitlane::bench::Race& race) { return race.drivers_size(); }
size_t touch(const pitlane::bench::Catalog& catalog) { return catalog.entries_size(); }

template <typename Message>
void run(const char* type, const std::string& payload, double seconds, int batch, long count,
         const std::string& operation) {
  const auto decode = [&payload] {
    Message message;  // fresh per operation, as a typical caller would
    if (!message.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
      fail("payload does not parse");
    }
    return touch(message);
  };

  Message message;
  if (!message.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    fail(std::string("payload is not a ") + type);
  }
  const auto encode = [&message] {
    std::string out;
    message.SerializeToString(&out);
    return out.size();
  };

  if (count > 0) {
    // The operation is chosen once: a string comparison per operation would be counted too.
    size_t total = 0;
    if (operation == "decode") total = repeat(decode, count);
    else if (operation == "encode") total = repeat(encode, count);
    else fail("unknown operation " + operation);
    std::printf("{\"impl\": \"cpp\", \"operation\": \"%s\", \"count\": %ld, \"sink\": %zu}\n",
                operation.c_str(), count, total);
    return;
  }

  rate(decode, batch, kWarmupSeconds);
  const double decode_per_s = rate(decode, batch, seconds);
  rate(encode, batch, kWarmupSeconds);
  const double encode_per_s = rate(encode, batch, seconds);

  std::printf(
      "{\"impl\": \"cpp\", \"type\": \"%s\", \"bytes\": %zu, "
      "\"decode_per_s\": %.1f, \"encode_per_s\": %.1f}\n",
      type, payload.size(), decode_per_s, encode_per_s);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, type, operation = "encode";
  double seconds = 0;
  long count = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--payload") path = argv[i + 1];
    else if (flag == "--type") type = argv[i + 1];
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (flag == "--count") count = std::atol(argv[i + 1]);
    else if (flag == "--operation") operation = argv[i + 1];
    else fail("unknown flag " + flag);
  }
  if (argc % 2 == 0 || path.empty() || type.empty() || (seconds <= 0 && count <= 0)) {
    fail("usage: protobuf_bench --payload FILE --type Race|Catalog --seconds S | --count N --operation encode|decode");
  }

  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot read " + path);
  const std::string payload{std::istreambuf_iterator<char>(file), {}};

  // Batches of about a millisecond keep clock reads out of the measurement.
  if (type == "Race") run<pitlane::bench::Race>("Race", payload, seconds, 1000, count, operation);
  else if (type == "Catalog") run<pitlane::bench::Catalog>("Catalog", payload, seconds, 10, count, operation);
  else fail("unknown type " + type);
  return 0;
}
