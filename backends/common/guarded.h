// eagle's own backends include the author helpers under their historical name.
// The helpers live in backends/include/eagle/backend_kit.h (installed with eagle).
#pragma once

#include "eagle/backend_kit.h"
