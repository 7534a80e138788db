// consumer_throughput: records per second through memtrack's own RingConsumer and Writer.
//
//   consumer_throughput [--records N] [--batch N] [--ring-size BYTES] [--max-fill F]
//                       [--chunk-records N] [--threads N | --split] [--zstd-level L]
//                       [-o DIR] [--keep] [--json FILE]
//
// A feeder thread runs bench/ring_feed.bpf.c through BPF_PROG_TEST_RUN; each run writes a batch
// of synthetic records (bench/ring_feed.h) into a BPF ring with bpf_loop. The feeder waits while
// the ring is above --max-fill less one batch, so no reservation fails: it plays the part of
// memtrack's pressure stops, which need real processes to stop. A RingConsumer reads the ring into
// a Writer through the Lane and the DrainBarrier TrackRun uses (one io_context run by --threads
// threads, a strand each, the batch queue between them), and the Writer writes a real zstd
// artifact. --split runs the consumer and the Writer on an io_context and a thread each instead,
// to time them apart.
//
// Measured: records / (first record written .. artifact finished), and the CPU time of every
// thread. Then the artifact is read back (read_artifact): every record must come out, in order,
// with the fields it was written with. Exits 1 when a record is missing, different or dropped.
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include "RingFeeder.hpp"
#include "actors/DrainBarrier.hpp"
#include "actors/Lane.hpp"
#include "actors/StatsReport.hpp"
#include "actors/Writer.hpp"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "format/ArtifactReader.hpp"
#include "format/ZstdFileWriter.hpp"
#include "ring/RingView.hpp"

extern "C" {
#include "ring_feed.h"
}

namespace memtrack::bench {
namespace {

namespace asio = boost::asio;

struct Options {
    uint64_t records = 20'000'000;
    uint32_t batch = 8192;
    uint64_t ring_bytes = 64ull << 20;  // memtrack's default --ring-size
    double max_fill = 0.75;             // memtrack's default --stop-fill
    double wakeup_fill = 1.0 / 64;      // memtrack's default --wakeup-fill
    size_t chunk_records = 1024;        // memtrack's default --chunk-records
    unsigned threads = 1;
    bool split = false;
    int zstd_level = ZstdFileWriter::kDefaultLevel;
    std::string dir = "/tmp";
    bool keep = false;
    std::string json;
};

double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// What the feeder thread did.
struct FeedResult {
    uint64_t fed = 0;
    uint64_t t_first_ns = 0;  // just before the first record was written
    uint64_t waits = 0;       // times it found the ring too full and slept
    double cpu_s = 0;         // its CPU time, the BPF program's runs included
    std::optional<Error> error;
};

// Writes opt.records records, never letting the ring's fill pass opt.max_fill.
FeedResult feed_all(RingFeeder& feeder, const RingView& ring, const Options& opt) {
    ::pthread_setname_np(::pthread_self(), "ct-feeder");
    FeedResult res;
    const double cpu0 = thread_cpu_s();
    const uint64_t wakeup_bytes = uint64_t(opt.wakeup_fill * double(ring.capacity()));
    const uint64_t batch_bytes = uint64_t(opt.batch) * RingView::record_bytes(sizeof(mt_record));
    const uint64_t limit = uint64_t(opt.max_fill * double(ring.capacity()));
    const uint64_t fill_before_batch = limit > batch_bytes ? limit - batch_bytes : 0;
    res.t_first_ns = monotonic_ns();
    while (res.fed < opt.records) {
        const auto n = uint32_t(std::min<uint64_t>(opt.batch, opt.records - res.fed));
        while (ring.fill_bytes() > fill_before_batch) {
            ++res.waits;
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        if (auto r = feeder.feed(res.fed, n, wakeup_bytes); !r) {
            res.error = r.error();
            break;
        }
        res.fed += n;
    }
    res.cpu_s = thread_cpu_s() - cpu0;
    return res;
}

// Reads the artifact back; every event must be the record of its sequence number.
struct Check {
    uint64_t events = 0;
    uint64_t mismatches = 0;
    std::optional<Error> error;
};

Check check_artifact(const std::string& path) {
    Check c;
    uint64_t last_ts = 0;
    auto n = read_artifact(path, [&](const Event& e) {
        mt_record want{};
        ring_feed_fill(&want, c.events);
        want.timestamp = e.timestamp;  // the only field the BPF side chose
        const auto expected = decode_record(want);
        if (!expected || *expected != e || e.timestamp < last_ts) {
            if (c.mismatches++ == 0)
                log::error("event {} differs from the record written (addr {:#x}, type {})", c.events, e.addr,
                           artifact_name(e.kind));
        }
        last_ts = e.timestamp;
        ++c.events;
    });
    if (!n) c.error = n.error();
    return c;
}

// The events lane and its DrainBarrier, as TrackRun makes them.
struct Pipeline {
    Pipeline(asio::io_context& consumer_io, asio::io_context& writer_io, RingView ring, ZstdFileWriter artifact,
             const Options& opt)
        : lane(consumer_io, writer_io, std::move(ring),
               {RingConsumer::Records::Events, opt.chunk_records, std::chrono::microseconds(0),
                std::chrono::milliseconds(10)},
               std::move(artifact)),
          barrier(consumer_io, {&lane}), consumer_work(consumer_io.get_executor()),
          writer_work(writer_io.get_executor()) {}

    // Reads the ring to the producer position of now, closes the artifact, lets the io_contexts
    // run out of work: TrackRun's shutdown.
    void finish() {
        barrier.close(nullptr, [this](Result<uint64_t> r) {
            t_finished_ns = monotonic_ns();
            if (!r) error = r.error();
            else records_written = r.value();
            lane.consumer().stop();
            consumer_work.reset();
            writer_work.reset();
        });
    }

    // The stats object memtrack writes, of what this pipeline has: its consumer and Writer.
    boost::json::object stats() {
        RunCounters c;
        c.events = lane.consumer().counters();
        c.writer = lane.sink().counters();
        return stats_json(c);
    }

    SinkLane<Writer> lane;
    DrainBarrier barrier;
    asio::executor_work_guard<asio::io_context::executor_type> consumer_work, writer_work;
    // Set on the barrier's strand, read after every io thread has joined.
    uint64_t t_finished_ns = 0;
    uint64_t records_written = 0;
    std::optional<Error> error;
};

int run(const Options& opt) {
    auto feeder = value_or_throw(RingFeeder::load(opt.ring_bytes));
    const std::string path = fmt::format("{}/consumer_throughput.{}.MemtrackArtifact.msgpack", opt.dir, ::getpid());
    auto artifact = ZstdFileWriter::create(path, opt.zstd_level);
    if (!artifact) throw FatalError(artifact.error());

    asio::io_context io, writer_io;
    asio::io_context& wio = opt.split ? writer_io : io;
    Pipeline pipe(io, wio, value_or_throw(RingView::map(feeder.ring_fd())), std::move(artifact).value(), opt);
    RingView& ring = pipe.lane.ring();
    pipe.lane.consumer().start();

    // Every io thread's CPU time, by role.
    std::vector<std::pair<std::string, double>> cpu;
    std::mutex cpu_mu;
    auto run_io = [&](asio::io_context& ctx, std::string role) {
        ::pthread_setname_np(::pthread_self(), ("ct-" + role).c_str());  // for perf report --comm
        const double c0 = thread_cpu_s();
        ctx.run();
        std::lock_guard lock(cpu_mu);
        cpu.emplace_back(std::move(role), thread_cpu_s() - c0);
    };
    std::vector<std::thread> threads;
    if (opt.split) {
        threads.emplace_back(run_io, std::ref(io), "consumer");
        threads.emplace_back(run_io, std::ref(writer_io), "writer");
    } else {
        for (unsigned i = 0; i < opt.threads; ++i) threads.emplace_back(run_io, std::ref(io), "io");
    }
    FeedResult fed = feed_all(feeder, ring, opt);
    pipe.finish();
    for (auto& t : threads) t.join();

    const double secs = double(pipe.t_finished_ns - fed.t_first_ns) / 1e9;
    const uint64_t dropped = feeder.dropped();
    double io_cpu = 0;
    for (auto& [role, s] : cpu) io_cpu += s;
    const double compressed = double(::access(path.c_str(), F_OK) == 0 ? std::filesystem::file_size(path) : 0);

    fmt::print("records fed        {} in batches of {}, ring {} MiB, fill kept <= {:.0f} % ({} waits for room)\n",
               fed.fed, opt.batch, opt.ring_bytes >> 20, opt.max_fill * 100, fed.waits);
    fmt::print("pipeline           {:.2f} M records/s ({:.3f} s from the first record written to the artifact "
               "finished)\n",
               double(fed.fed) / secs / 1e6, secs);
    for (auto& [role, s] : cpu)
        fmt::print("  {:<16} {:.3f} s CPU: {:.2f} M records per CPU-second\n", role + " thread", s,
                   double(fed.fed) / s / 1e6);
    fmt::print("  {:<16} {:.3f} s CPU (BPF program runs included)\n", "feeder thread", fed.cpu_s);
    fmt::print("artifact           {:.1f} MiB, zstd level {}\n", compressed / double(1 << 20), opt.zstd_level);

    Check check = check_artifact(path);
    if (!opt.keep) ::unlink(path.c_str());
    fmt::print("read back          {} events, {} differing; written {}; dropped {}\n", check.events,
               check.mismatches, pipe.records_written, dropped);

    bool ok = !fed.error && !pipe.error && !check.error && check.mismatches == 0 && check.events == fed.fed &&
              pipe.records_written == fed.fed && dropped == 0;
    if (fed.error) log::error("feeding failed: {}", fed.error->message());
    if (pipe.error) log::error("artifact failed: {}", pipe.error->message());
    if (check.error) log::error("reading the artifact back failed: {}", check.error->message());
    if (!ok) log::error("FAILED: the artifact does not hold exactly the records fed");

    if (!opt.json.empty()) {
        boost::json::object j{{"records", fed.fed},
                              {"seconds", secs},
                              {"records_per_s", double(fed.fed) / secs},
                              {"io_cpu_s", io_cpu},
                              {"feeder_cpu_s", fed.cpu_s},
                              {"feeder_waits", fed.waits},
                              {"artifact_bytes", compressed},
                              {"events_read_back", check.events},
                              {"mismatches", check.mismatches},
                              {"dropped", dropped},
                              {"ok", ok},
                              {"stats", pipe.stats()}};
        boost::json::object per_thread;
        for (auto& [role, s] : cpu) per_thread[role] = per_thread.contains(role) ? per_thread[role].as_double() + s : s;
        j["thread_cpu_s"] = per_thread;
        std::ofstream(opt.json) << boost::json::serialize(j) << "\n";
    }
    return ok ? 0 : 1;
}

}  // namespace
}  // namespace memtrack::bench

int main(int argc, char** argv) {
    using memtrack::bench::Options;
    Options opt;
    CLI::App app{"records per second through memtrack's RingConsumer and Writer"};
    app.add_option("--records", opt.records, "records to write")->check(CLI::PositiveNumber);
    app.add_option("--batch", opt.batch, "records per BPF program run")->check(CLI::Range(1u, 1u << 20));
    app.add_option("--ring-size", opt.ring_bytes, "ring bytes (power of two)");
    app.add_option("--max-fill", opt.max_fill, "the feeder keeps the ring's fill below this")->check(CLI::Range(0.01, 1.0));
    app.add_option("--chunk-records", opt.chunk_records, "RingConsumer records per chunk")->check(CLI::PositiveNumber);
    app.add_option("--threads", opt.threads, "threads running the io_context")->check(CLI::Range(1u, 64u));
    app.add_flag("--split", opt.split, "consumer and Writer on an io_context and a thread each");
    app.add_option("--zstd-level", opt.zstd_level, "artifact compression level");
    app.add_option("-o,--output", opt.dir, "folder for the artifact");
    app.add_flag("--keep", opt.keep, "keep the artifact");
    app.add_option("--json", opt.json, "also write the numbers as JSON to this file");
    CLI11_PARSE(app, argc, argv);
    try {
        return memtrack::bench::run(opt);
    } catch (const memtrack::FatalError& e) {
        std::fprintf(stderr, "consumer_throughput: %s\n", e.what());
        return e.exit_code();
    }
}
