// gRPC C++'s own client for the gRPC benchmark (Debian's libgrpc++): a second harness beside
// pitlane-bench-client and h2load that drives any bench.v1.Bench server, so no figure rests on
// one client alone.
//
// Usage: grpc_bench_client --port N [--seconds S] [--label SERVER] [--unary C M]
// Prints JSON lines like pitlane-bench-client's ("impl" is SERVER, default "cpp"; "client" is
// "cpp"). Without --unary: one server stream's messages/s, then one ping-pong stream's round
// trips/s with p50/p99 in µs, each through the synchronous API (one stream, read in a loop).
// With --unary C M: unary calls as a production client makes them, through the callback API
// with a deadline on every call (so every request carries grpc-timeout), M in flight on each
// of C channels (C connections); calls/s with p50/p99. The first half second is warm-up.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
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
  std::fprintf(stderr, "usage: grpc_bench_client --port N [--seconds S] [--label SERVER] [--unary C M]\n");
  std::exit(2);
}

// Keeps `in_flight` unary calls going on each of `channels` channels until the recorder says
// time is up, then waits for the calls still out. Each call has its own context and deadline,
// and its completion (on gRPC's callback threads) starts the next one.
class UnaryLoad {
 public:
  UnaryLoad(int port, int channels, int in_flight, Recorder& recorder) : recorder_(recorder) {
    for (int i = 0; i < channels; ++i) {
      grpc::ChannelArguments arguments;
      // A channel of its own for each: gRPC would otherwise share one connection among them.
      arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      arguments.SetInt("pitlane.bench.channel", i);
      stubs_.push_back(bench::v1::Bench::NewStub(grpc::CreateCustomChannel(
          "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), arguments)));
    }
    request_.set_body(std::string(16, '\x42'));
    outstanding_ = channels * in_flight;
    for (auto& stub : stubs_) {
      for (int i = 0; i < in_flight; ++i) Start(stub.get());
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return outstanding_ == 0; });
  }

  bool failed() const { return failed_; }

 private:
  struct Call {
    grpc::ClientContext context;
    bench::v1::Payload response;
    Clock::time_point sent;
  };

  // Starts one call, counted in outstanding_ by the caller; no lock is held here, as gRPC may
  // run the completion on this thread.
  void Start(bench::v1::Bench::Stub* stub) {
    auto* call = new Call;
    call->sent = Clock::now();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    stub->async()->Unary(&call->context, &request_, &call->response, [this, stub, call](grpc::Status status) {
      const double latency = std::chrono::duration<double, std::micro>(Clock::now() - call->sent).count();
      delete call;
      bool again;
      {
        std::lock_guard<std::mutex> guard(mutex_);
        if (!status.ok()) {
          if (!failed_) std::fprintf(stderr, "grpc_bench_client: unary call failed: %s\n", status.error_message().c_str());
          failed_ = true;
          stopping_ = true;
        }
        if (!stopping_ && !recorder_.Record(1, latency)) stopping_ = true;
        again = !stopping_;
        if (!again && --outstanding_ == 0) done_.notify_one();
      }
      if (again) Start(stub);
    });
  }

  Recorder& recorder_;
  std::vector<std::unique_ptr<bench::v1::Bench::Stub>> stubs_;
  bench::v1::Payload request_;
  std::mutex mutex_;
  std::condition_variable done_;
  int outstanding_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  double seconds = 5;
  std::string label = "cpp";
  int unary_channels = 0, unary_in_flight = 0;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage();
    if (std::strcmp(argv[i], "--unary") == 0) {
      if (i + 2 >= argc) usage();
      unary_channels = std::atoi(argv[i + 1]);
      unary_in_flight = std::atoi(argv[i + 2]);
      if (unary_channels < 1 || unary_in_flight < 1) usage();
      ++i;
    } else if (std::strcmp(argv[i], "--port") == 0) {
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
  if (unary_channels > 0) {
    Recorder recorder(label, seconds);
    UnaryLoad load(port, unary_channels, unary_in_flight, recorder);
    if (load.failed()) return 1;
    const std::string name = "unary c=" + std::to_string(unary_channels) + " m=" + std::to_string(unary_in_flight);
    recorder.Report(name.c_str());
    return 0;
  }
  // Each case on a connection of its own: a connection's state after one case (gRPC's read
  // buffers sized for a fast stream's bursts, say) would otherwise carry into the next.
  auto connect = [port](int case_number) {
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    arguments.SetInt("pitlane.bench.case", case_number);
    return bench::v1::Bench::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), arguments));
  };
  Payload request;
  request.set_body(std::string(16, '\x42'));

  {
    // Server streaming: one (practically) endless stream, the clock read once per 1,000
    // messages; cancelled once time is up.
    grpc::ClientContext context;
    Payload stream_request = request;
    stream_request.set_seq(INT64_MAX);
    auto stub = connect(0);
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
    auto stub = connect(1);
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
