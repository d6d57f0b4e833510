// gRPC C++'s client as a SwiftKart follower load driver (Debian's libgrpc++): the same steps and
// JSON lines as swiftkart-load, so `make bench` judges the server with a driver that no one here
// wrote and that is not itself the limit on one core.
//
// Usage: swiftkart_follow_load --port N --server-pid P [--steps 1000,2500,5000,10000]
//                              [--connections 10] [--seconds 3] [--race NAME]
// Adds followers of one race step by step (kart locations only, spread over `connections`
// channels, each its own HTTP/2 connection), through the callback API: one bidirectional
// reactor per follower, its request written once and its stream left open. After each step it
// measures, for `seconds`: the delay from each locations event's `recorded_at` to its arrival
// (p50, p99), messages per second, the server's RSS and both processes' CPU.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "swiftkart_follow.grpc.pb.h"

namespace {

constexpr int kBuckets = 2001;  // whole milliseconds; the last holds >= 2 s

// Delays in milliseconds, counted with relaxed atomics from gRPC's callback threads.
struct Histogram {
  std::atomic<bool> measuring{false};
  std::atomic<long> first_events{0};
  std::vector<std::atomic<long>> buckets = std::vector<std::atomic<long>>(kBuckets);

  void Record(long milliseconds) {
    if (!measuring.load(std::memory_order_relaxed)) return;
    const long bucket = milliseconds < 0 ? 0 : (milliseconds >= kBuckets ? kBuckets - 1 : milliseconds);
    buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  }

  void Start() {
    for (auto& bucket : buckets) bucket.store(0, std::memory_order_relaxed);
    measuring.store(true, std::memory_order_relaxed);
  }

  // Stops counting; returns the count and the p50 and p99 in milliseconds.
  void Stop(long& count, long& p50, long& p99) {
    measuring.store(false, std::memory_order_relaxed);
    std::vector<long> merged(kBuckets);
    count = 0;
    for (int i = 0; i < kBuckets; ++i) count += merged[i] = buckets[i].load(std::memory_order_relaxed);
    auto percentile = [&](double p) {
      long seen = 0;
      for (int i = 0; i < kBuckets; ++i) {
        seen += merged[i];
        if (seen >= p * count) return static_cast<long>(i);
      }
      return static_cast<long>(kBuckets - 1);
    };
    p50 = percentile(0.5);
    p99 = percentile(0.99);
  }
};

long NowMilliseconds() {
  timespec time{};
  clock_gettime(CLOCK_REALTIME, &time);
  return time.tv_sec * 1000L + time.tv_nsec / 1000000L;
}

long ResidentKiB(long pid) {
  FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (file == nullptr) return 0;
  char line[256];
  long kib = 0;
  while (std::fgets(line, sizeof line, file) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::atol(line + 6);
  }
  std::fclose(file);
  return kib;
}

// CPU seconds (user + system) a process has used, from /proc/PID/stat.
double CPUSeconds(long pid) {
  FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (file == nullptr) return 0;
  char line[1024] = {0};
  const bool read = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  if (!read) return 0;
  const char* rest = std::strrchr(line, ')');
  if (rest == nullptr) return 0;
  std::istringstream fields(rest + 2);
  std::string field;
  double ticks = 0;
  // After the command name: state is field 3; utime and stime are fields 14 and 15.
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14 || index == 15) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// One follower: writes its request once, then reads until the server ends the stream.
class Follower : public grpc::ClientBidiReactor<FollowRaceRequest, FollowRaceResponse> {
 public:
  Follower(SwiftKartService::Stub* stub, const std::string& race, Histogram& histogram)
      : histogram_(histogram) {
    request_.set_race_name(race);
    request_.add_event_types(RACE_EVENT_TYPE_KART_LOCATIONS);
    stub->async()->FollowRace(&context_, this);
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended; OnDone follows
    if (response_.has_locations() && response_.locations().karts_size() > 0) {
      if (first_) {
        first_ = false;
        histogram_.first_events.fetch_add(1, std::memory_order_relaxed);
      }
      const auto& recorded = response_.locations().karts(0).recorded_at();
      histogram_.Record(NowMilliseconds() - (recorded.seconds() * 1000L + recorded.nanos() / 1000000L));
    }
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    if (!status.ok() && !cancelled_.load()) {
      std::fprintf(stderr, "swiftkart_follow_load: a follower ended: %s\n", status.error_message().c_str());
    }
    done_.store(true);
  }

  void Cancel() {
    cancelled_.store(true);
    context_.TryCancel();
  }

  bool done() const { return done_.load(); }

 private:
  grpc::ClientContext context_;
  FollowRaceRequest request_;
  FollowRaceResponse response_;
  Histogram& histogram_;
  bool first_ = true;
  std::atomic<bool> cancelled_{false}, done_{false};
};

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: swiftkart_follow_load --port N --server-pid P [--steps 1000,2500,5000,10000] "
               "[--connections 10] [--seconds 3] [--race NAME]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0, connections = 10;
  long server_pid = 0;
  double seconds = 3;
  std::string race = "Zuera Finale";
  std::vector<int> steps = {1000, 2500, 5000, 10000};
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) Usage();
    const std::string option = argv[i], value = argv[i + 1];
    if (option == "--port") {
      port = std::atoi(value.c_str());
    } else if (option == "--server-pid") {
      server_pid = std::atol(value.c_str());
    } else if (option == "--connections") {
      connections = std::atoi(value.c_str());
    } else if (option == "--seconds") {
      seconds = std::atof(value.c_str());
    } else if (option == "--race") {
      race = value;
    } else if (option == "--steps") {
      steps.clear();
      std::istringstream list(value);
      for (std::string step; std::getline(list, step, ',');) steps.push_back(std::atoi(step.c_str()));
    } else {
      Usage();
    }
  }
  if (port <= 0 || connections < 1 || seconds <= 0 || steps.empty()) Usage();

  std::vector<std::unique_ptr<SwiftKartService::Stub>> stubs;
  for (int i = 0; i < connections; ++i) {
    grpc::ChannelArguments arguments;
    // A connection of its own for each channel: gRPC would otherwise share one among them.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    arguments.SetInt("pitlane.bench.channel", i);
    // As many streams on a connection as the server allows.
    arguments.SetInt(GRPC_ARG_MAX_CONCURRENT_STREAMS, 1 << 30);
    stubs.push_back(SwiftKartService::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), arguments)));
  }

  Histogram histogram;
  std::vector<std::unique_ptr<Follower>> followers;
  const long baseline_kib = ResidentKiB(server_pid);
  for (const int target : steps) {
    while (static_cast<int>(followers.size()) < target) {
      const size_t index = followers.size();
      followers.push_back(std::make_unique<Follower>(stubs[index % stubs.size()].get(), race, histogram));
    }
    // Every follower has had an event (a bound on the wait, not a measurement).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (histogram.first_events.load() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // let the ramp settle
    const double server_before = CPUSeconds(server_pid), load_before = CPUSeconds(getpid());
    const auto window_start = std::chrono::steady_clock::now();
    histogram.Start();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    long count = 0, p50 = 0, p99 = 0;
    histogram.Stop(count, p50, p99);
    const long rss_kib = ResidentKiB(server_pid);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start).count();
    const double server_cpu = (CPUSeconds(server_pid) - server_before) / elapsed;
    const double load_cpu = (CPUSeconds(getpid()) - load_before) / elapsed;
    const double per_follower = static_cast<double>(rss_kib - baseline_kib) / target;
    std::printf("{\"followers\": %d, \"p50_ms\": %ld, \"p99_ms\": %ld, \"messages_per_s\": %ld, \"server_rss_kib\": %ld, "
                "\"kib_per_follower\": %.1f, \"server_cpu\": %.2f, \"load_cpu\": %.2f, \"driver\": \"cpp\"}\n",
                target, p50, p99, static_cast<long>(count / elapsed), rss_kib, per_follower, server_cpu, load_cpu);
    std::fflush(stdout);
  }
  for (auto& follower : followers) follower->Cancel();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& follower : followers) {
    while (!follower->done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // A reactor may not be destroyed while its call is open: exit without destructors.
  std::_Exit(0);
}
