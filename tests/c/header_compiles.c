/* Compiled by tests/test_header.py as C99 and as C++17 with -Wall -Wextra -Werror -pedantic:
 * the seam header must be clean in both languages, twice included, and usable as declared. */
#include "eagle_backend.h"
#include "eagle_backend.h" /* the include guard holds */

typedef eagle_backend_status (*stream_create_fn)(const struct eagle_backend_stream_desc*, eagle_backend_stream*);

int main(void) {
    struct eagle_backend_stream_desc desc;
    stream_create_fn create = eagle_backend_stream_create;
    eagle_backend_host_fn host = 0;
    uint64_t groups = EAGLE_BACKEND_CAP_STREAM | EAGLE_BACKEND_CAP_FILTERING;
    int64_t none = EAGLE_BACKEND_STREAM_NONE;
    desc.struct_size = (uint32_t)sizeof desc;
    desc.flags = EAGLE_BACKEND_STREAM_NON_BLOCKING;
    (void)create;
    (void)host;
    (void)none;
    return (int)(groups & 0) + (EAGLE_BACKEND_VERSION == ((1u << 16) | 6u) ? EAGLE_BACKEND_OK : 1) +
           (int)(desc.flags - 1u);
}
