// gRPC C++'s own streaming client for the gRPC benchmark (Debian's libgrpc++): a second
// harness beside pitlane-bench-client that drives any bench.v1.Bench server, so no stream
// figure rests on one client alone. Uses the synchronous API: one stream at a time, read in a
// loop, which is what this measures.
//
// Usage: grpc_bench_client --port N [--seconds S] [--label SERVER]
// Prints JSON lines like pitlane-bench-client's ("impl" is SERVER, default "cpp"; "client" is
// "cpp"): one server stream's messages/s, then one ping-pong stream's round trips/s with
// p50/p99 in µs. The first half second of each is warm-up.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench.grpc.pb.h"

namespace {

using bench::v1::Payload;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kWarmUp(500);

// Counts operations once the warm-up is over until `seconds` have passed, as
// pitlane-bench-client's Recorder does, so the two clients' figures mean the same.
class Recorder {
 public:
  Recorder(std::string label, double seconds)
      : label_(std::move(label)), duration_(seconds), start_(Clock::now()) {}

  // Records `operations` finished operations (with one latency in µs, if >= 0); returns false
  // once the measurement is over.
  bool Record(long operations, double latency_us = -1) {
    const auto now = Clock::now();
    if (!measuring_) {
      if (now - start_ >= kWarmUp) {
        measuring_ = true;
        since_ = now;
      }
      return true;
    }
    count_ += operations;
    last_ = now;
    if (latency_us >= 0) latencies_.push_back(latency_us);
    return now - since_ < duration_;
  }

  void Report(const char* name) {
    const double elapsed = std::chrono::duration<double>(last_ - since_).count();
    std::string line = "{\"impl\": \"" + label_ + "\", \"client\": \"cpp\", \"case\": \"" + name +
                       "\", \"per_s\": " + std::to_string(std::lround(elapsed > 0 ? count_ / elapsed : 0));
    if (!latencies_.empty()) {
      std::sort(latencies_.begin(), latencies_.end());
      // Nearest rank, as pitlane-bench-client computes it.
      auto percentile = [&](double p) {
        const size_t rank = static_cast<size_t>(std::ceil(p * latencies_.size()));
        return latencies_[std::max<size_t>(rank, 1) - 1];
      };
      char figures[96];
      std::snprintf(figures, sizeof figures, ", \"p50_us\": %.1f, \"p99_us\": %.1f", percentile(0.5),
                    percentile(0.99));
      line += figures;
    }
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  const std::string label_;
  const std::chrono::duration<double> duration_;
  const Clock::time_point start_;
  Clock::time_point since_, last_;
  bool measuring_ = false;
  long count_ = 0;
  std::vector<double> latencies_;
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: grpc_bench_client --port N [--seconds S] [--label SERVER]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  double seconds = 5;
  std::string label = "cpp";
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage();
    if (std::strcmp(argv[i], "--port") == 0) {
      port = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--seconds") == 0) {
      seconds = std::atof(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--label") == 0) {
      label = argv[i + 1];
    } else {
      usage();
    }
  }
  if (port == 0) usage();
  auto stub = bench::v1::Bench::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  Payload request;
  request.set_body(std::string(16, '\x42'));

  {
    // Server streaming: one (practically) endless stream, the clock read once per 1,000
    // messages; cancelled once time is up.
    grpc::ClientContext context;
    Payload stream_request = request;
    stream_request.set_seq(INT64_MAX);
    auto reader = stub->ServerStream(&context, stream_request);
    Recorder recorder(label, seconds);
    Payload message;
    long batch = 0;
    while (reader->Read(&message)) {
      if (++batch == 1000) {
        batch = 0;
        if (!recorder.Record(1000)) break;
      }
    }
    context.TryCancel();
    reader->Finish();
    recorder.Report("server-stream");
  }
  {
    // Ping-pong: one message in flight; a round trip is a write and the read of its echo.
    grpc::ClientContext context;
    auto stream = stub->PingPong(&context);
    Recorder recorder(label, seconds);
    Payload echo;
    bool going = true;
    while (going) {
      const auto sent = Clock::now();
      if (!stream->Write(request) || !stream->Read(&echo)) {
        std::fprintf(stderr, "grpc_bench_client: ping-pong stream ended early\n");
        return 1;
      }
      going = recorder.Record(1, std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
    }
    stream->WritesDone();
    stream->Finish();
    recorder.Report("ping-pong");
  }
}
