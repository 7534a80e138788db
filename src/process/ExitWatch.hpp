#pragma once
// A wait for a process's exit on its pidfd, delivered on an executor (a strand). The one route
// by which memtrack learns that a process ended: the command (TrackRun), memtrack-guard and each
// process with links of its own (ProcessLinks).
//
// Invariant: `exited` runs only once the pidfd polls readable (pidfd_exited), never on a bare
// completion of the wait. With several threads running the io_context, the reactor may hand an
// event read for a pidfd just closed (an exited process's) to the descriptor that reuses its
// state: seen in `flood.sh --pipelines` (about one run in 10), where a live process lost its
// links before its exec and its new image ran unrecorded. Such a completion is counted and the
// wait made again. Not for concurrent use: give it a strand where a pool of threads runs the
// io_context, and call cancel() and destroy it on that strand.
//
// Invariant: a completion already queued when the watch is destroyed runs without touching it
// (the handler holds a weak token, not the watch): ProcessLinks destroys every watch at
// detach_all while a process's exit may be queued behind it on the strand, and once read a
// freed watch's pidfd (`poll pidfd 82: Bad file descriptor`) and could call its freed handler.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>

#include "core/Counter.hpp"
#include "core/Fd.hpp"

namespace memtrack {

class ExitWatch {
public:
    // Watches `pidfd` (owned from here on); early: where completions that were no exit are
    // counted (null: not counted).
    ExitWatch(const boost::asio::any_io_executor& executor, Fd pidfd, Counter* early = nullptr);
    ~ExitWatch();
    ExitWatch(const ExitWatch&) = delete;
    ExitWatch& operator=(const ExitWatch&) = delete;

    // `exited` runs once, on the executor, when the process has ended; never after cancel().
    void async_wait(std::function<void()> exited);
    // Ends the wait and closes the pidfd.
    void cancel();

    // What a completion of the wait does: the reactor calls it, and a test delivers one that is
    // not an exit, as the reactor did.
    void completed(const boost::system::error_code& ec);

private:
    void arm();

    boost::asio::posix::stream_descriptor descriptor_;
    Counter* early_;
    std::function<void()> exited_;
    // Expires with the watch: what a queued completion checks before it touches the watch.
    std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace memtrack
