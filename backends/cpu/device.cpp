// Group device (bit 10): the host described as device 0.
#include <unistd.h>

#include <fstream>
#include <string>

#include "runtime.h"
#include "thread_pool.h"

using namespace eagle;
using namespace eagle::cpu;

namespace {

std::string cpuinfo_field(const char* key) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    const std::string k(key);
    while (std::getline(in, line)) {
        if (line.compare(0, k.size(), k) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        auto v = line.substr(colon + 1);
        const auto first = v.find_first_not_of(" \t");
        return first == std::string::npos ? std::string() : v.substr(first);
    }
    return {};
}

// "48K" / "1024 K" / "2M" from /sys.
int64_t sys_cache_size(int index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string v;
    if (!(in >> v) || v.empty()) return 0;
    int64_t n = 0;
    size_t i = 0;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') n = n * 10 + (v[i++] - '0');
    if (i < v.size() && (v[i] == 'K' || v[i] == 'k')) n *= 1024;
    if (i < v.size() && (v[i] == 'M' || v[i] == 'm')) n *= 1024 * 1024;
    return n;
}

std::string sys_cache_type(int index, const char* what) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/" + what);
    std::string v;
    in >> v;
    return v;
}

int64_t cache_bytes(int level, bool data) {
    long v = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
    v = level == 1 ? sysconf(_SC_LEVEL1_DCACHE_SIZE) : sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (v > 0) return v;
    for (int i = 0; i < 8; ++i) {
        if (sys_cache_type(i, "level") != std::to_string(level)) continue;
        const auto type = sys_cache_type(i, "type");
        if (data && type == "Instruction") continue;
        return sys_cache_size(i);
    }
    return 0;
}

}  // namespace

EAGLE_EXPORT eagle_backend_status eagle_backend_device_props(int32_t device, struct eagle_backend_device_props* props) {
    return guarded("eagle_backend_device_props", [&] {
        require(props, "props");
        check_device(device, "device");
        struct eagle_backend_device_props p;
        std::memset(&p, 0, sizeof p);
        p.device = 0;
        std::string name = cpuinfo_field("model name");
        if (name.empty()) name = cpuinfo_field("Processor");
        if (name.empty()) name = "host cpu";
        copy_string(p.name, name);
        // The threads a launch computes on: the CPUs of the affinity mask, or $EAGLE_CPU_THREADS.
        p.sm_count = configured_threads();
        const std::string mhz = cpuinfo_field("cpu MHz");
        if (!mhz.empty()) p.clock_rate_khz = static_cast<int32_t>(std::stod(mhz) * 1000.0);
        p.warp_size = 1;
        p.shared_mem_per_block = cache_bytes(1, true);
        p.shared_mem_per_sm = cache_bytes(2, true);
        write_out(props, p, "props");
    });
}
