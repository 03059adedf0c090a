/* SPDX-License-Identifier: MIT */
/*
 * The CPU floor of the loopback: the same pinned threads as the CPU executor's series passing
 * one cache line per hop around the same path (sensor -> NIC engine -> executor -> NIC engine
 * -> sensor; with the engine inline, sensor -> executor -> sensor), with nothing else done.
 * What a round trip through those cores costs on this machine, measured in the same run: the
 * CPU executor is judged against it as the GPU executors are against the CPU<->GPU floor.
 * Paced as the series: the same hops cost more on some hosts when the cores wait between
 * messages than back to back, and a floor measured back to back would not be the series'.
 */
#ifndef GPUNIC_EXP_CPUFLOOR_H
#define GPUNIC_EXP_CPUFLOOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * cpu_floor_run - @iters round trips after @warmup, each written to @rtt_ns (ns)
 * @cpu_sensor, @cpu_engine, @cpu_exec: where each thread is pinned (-1: unpinned); the calling
 * thread plays no part. @inline_engine: the executor's thread is also the engine (two hops).
 * @interval_ns: a round trip starts this long after the last one started, or at once when
 * that one took longer (the bench's --interval-us); 0: back to back.
 * @halt: once it is set (SIGINT), no further round trip starts; *@done says how many of the
 * @iters completed (all of them when nothing halted the run).
 * Return: 0 (also when halted), an errno from starting a thread, or ETIMEDOUT when a hop
 * stalls for 10 s.
 */
int cpu_floor_run(int cpu_sensor, int cpu_engine, int cpu_exec, bool inline_engine,
		  uint32_t iters, uint32_t warmup, uint64_t interval_ns, uint64_t *rtt_ns,
		  const atomic_bool *halt, uint32_t *done);

#endif
