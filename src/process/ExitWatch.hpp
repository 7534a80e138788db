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
// io_context, and call cancel() on that strand.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>

#include "core/Counter.hpp"
#include "core/Fd.hpp"

namespace memtrack {

class ExitWatch {
public:
    // Watches `pidfd` (owned from here on); early: where completions that were no exit are
    // counted (null: not counted).
    ExitWatch(const boost::asio::any_io_executor& executor, Fd pidfd, Counter* early = nullptr);

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
};

}  // namespace memtrack
