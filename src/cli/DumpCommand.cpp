#include "cli/DumpCommand.hpp"

#include <cstdio>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "format/ArtifactReader.hpp"
#include "format/JsonLines.hpp"
#include "format/Summary.hpp"

namespace memtrack {

int run_dump(const DumpOptions& opts) {
    Summary summary;
    std::string line;
    std::function<void(const Event&)> on_event;
    if (opts.summary) {
        on_event = [&](const Event& e) { summary.add(e); };
    } else {
        on_event = [&](const Event& e) {
            line = event_to_json(e);
            line += '\n';
            std::fwrite(line.data(), 1, line.size(), stdout);
        };
    }

    auto result = read_artifact(opts.file, on_event);
    // What was read is worth printing even when the file is damaged: it is exactly what the
    // runner would have kept, since it too stops at the first bad value.
    if (opts.summary) std::fputs(summary.text().c_str(), stdout);
    // stdout before stderr, so the error line comes after the events in a shared terminal.
    std::fflush(stdout);
    if (!result) {
        fmt::print(stderr, "memtrack: dump: {}: {}\n", opts.file, result.error().message());
        return 1;
    }
    if (std::ferror(stdout)) {
        fmt::print(stderr, "memtrack: dump: writing to stdout failed\n");
        return 1;
    }
    return 0;
}

}  // namespace memtrack
