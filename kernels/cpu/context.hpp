#pragma once
// What every CPU kernel call receives: the threads to run on and the ISA to run with.

#include "cpu_isa.hpp"
#include "thread_pool.hpp"

namespace llaisys::cpu {

struct CpuContext {
  ThreadPool* pool = nullptr;  // never null
  Isa isa = Isa::scalar;
};

}  // namespace llaisys::cpu
