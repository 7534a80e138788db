#pragma once
// A progress line on stderr for reports that take more than a second, on a terminal only.
#include <chrono>
#include <cstdint>
#include <string>

namespace memtrack::report {

class Progress {
public:
    // `what`: the file being read, shown in the line. Does nothing unless stderr is a terminal.
    explicit Progress(std::string what);
    ~Progress();  // clears the line if one was drawn
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // Once per event; looks at the clock only every 64Ki events.
    void tick() {
        if (!enabled_ || (++events_ & 0xffff) != 0) return;
        draw();
    }

private:
    void draw();

    std::string what_;
    bool enabled_ = false;
    bool drawn_ = false;
    uint64_t events_ = 0;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace memtrack::report
