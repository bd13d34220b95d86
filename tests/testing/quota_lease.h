// LeaseFor: a QuotaStore lease request in one line, for the quota tests.
#pragma once

#include <cstdint>

#include "common/quota/quota_store.h"

namespace hb::testing {

// Up to `requests` permits (at least one) at `priority` under a configured `rpm` (0: none).
inline LeaseRequest LeaseFor(QuotaPriority priority, int64_t requests, int64_t rpm) {
  LeaseRequest request;
  request.priority = priority;
  request.requests = requests;
  request.configured.rpm = rpm;
  return request;
}

}  // namespace hb::testing
