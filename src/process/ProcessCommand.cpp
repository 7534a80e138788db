#include "process/ProcessCommand.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace memtrack {

ProcessCommand read_process_command(pid_t pid) {
    ProcessCommand c;
    const std::string dir = "/proc/" + std::to_string(pid);
    std::error_code ec;
    c.path = std::filesystem::read_symlink(dir + "/exe", ec).string();
    std::ifstream in(dir + "/cmdline", std::ios::binary);
    c.args.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return c;
}

}  // namespace memtrack
