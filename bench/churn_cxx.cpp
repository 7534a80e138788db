// C++ container churn for scripts/bench.sh: N rounds, each building and destroying a vector
// grown by push_back (7 reallocations), a std::map of 8 nodes holding strings too long for the
// small-string buffer (16 allocations), and a string grown by appending (a few reallocations).
// About 27 operator new / operator delete pairs per round, all through libstdc++'s operators.
//
//   churn_cxx [N]   (default 40000)
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {
volatile size_t g_sink;

void round(long i)
{
	std::vector<long> v;
	for (int k = 0; k < 64; ++k) v.push_back(i + k);
	std::map<int, std::string> m;
	for (int k = 0; k < 8; ++k) m.emplace(int(i) + k, std::string(24 + k, char('a' + k)));
	std::string s;
	for (int k = 0; k < 20; ++k) s += "0123456789";
	g_sink = v.size() + m.size() + s.size() + v.back() + m.begin()->second.size();
}
}  // namespace

int main(int argc, char** argv)
{
    const long n = argc > 1 ? std::atol(argv[1]) : 40000;
    if (n < 0) {
        std::fprintf(stderr, "usage: churn_cxx [N]\n");
        return 2;
    }
    for (long i = 0; i < n; ++i) round(i);
    return 0;
}
