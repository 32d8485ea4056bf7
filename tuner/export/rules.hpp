// The dispatch rules (export/runtime/dispatch_rules.h, which has no namespace of its own) in
// cmt::rules, once per translation unit, for the tool's code that applies them.
#pragma once

namespace cmt::rules {
#include "export/runtime/dispatch_rules.h"
}  // namespace cmt::rules
