#include "probes/BpfCounters.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <string>
#include <vector>

namespace memtrack {

BpfCounters::BpfCounters(int map_fd) : fd_(map_fd) {
    const int n = libbpf_num_possible_cpus();
    cpus_ = n > 0 ? unsigned(n) : 1;
}

Result<uint64_t> BpfCounters::read(uint32_t index) const {
    std::vector<uint64_t> values(cpus_);
    if (bpf_map_lookup_elem(fd_, &index, values.data()) != 0) {
        const int err = errno;
        read_errors_.fetch_add(1, std::memory_order_relaxed);
        return errno_error("read BPF counter", std::to_string(index), err);
    }
    uint64_t sum = 0;
    for (uint64_t v : values) sum += v;
    return sum;
}

uint64_t BpfCounters::shown(uint32_t index) const {
    auto v = read(index);
    return v ? v.value() : 0;
}

}  // namespace memtrack
