#pragma once
// The benchmark programs' --json FILE: one JSON document and a newline.
#include <cstdio>
#include <fstream>
#include <string>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace memtrack::bench {

// false (said on stderr, in one line) when FILE could not be written.
inline bool write_json_file(const char* program, const std::string& path, const boost::json::value& v) {
    std::ofstream out(path);
    out << boost::json::serialize(v) << "\n";
    if (out.flush()) return true;
    std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
    return false;
}

}  // namespace memtrack::bench
