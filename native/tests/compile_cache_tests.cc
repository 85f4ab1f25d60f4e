// compiler/compile_cache.h: eviction by bytes, sharing of a compile in flight, errors and
// cancellations that never poison a key, ResetAfterFork, and many threads at once.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "compiler/compile_cache.h"
#include "support/cancellation.h"
#include "support/error.h"

namespace {

using xg2::CancellationToken;
using xg2::CompilationCancelledError;
using xg2::CompilationTimeoutError;
using Value = std::shared_ptr<const std::string>;
using Cache = xg2::CompileCache<Value>;

// A compile of `text` charged `bytes`, counting its runs in `runs`.
Cache::Compile Compiles(const std::string& text, size_t bytes, std::atomic<int>* runs = nullptr) {
  return [text, bytes, runs](const CancellationToken*) {
    if (runs != nullptr) ++*runs;
    return Cache::Built{std::make_shared<const std::string>(text), bytes, std::nullopt};
  };
}

// A compile that runs until `release` is set, or its caller's token fires (as a real compile's
// safe points would stop it); counts its starts in `started`.
Cache::Compile Blocks(const std::string& text, const std::atomic<bool>& release, std::atomic<int>& started) {
  return [&release, &started, text](const CancellationToken* cancel) {
    ++started;
    while (!release.load()) {
      if (cancel != nullptr) cancel->Check(true);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return Cache::Built{std::make_shared<const std::string>(text), 1, std::nullopt};
  };
}

void WaitUntil(const std::function<bool()>& condition) {
  while (!condition()) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

TEST(CompileCacheEvictsLeastRecentlyUsedByBytes) {
  Cache cache(100, true);
  cache.GetOrCompile("a", Compiles("A", 40), nullptr);
  cache.GetOrCompile("b", Compiles("B", 40), nullptr);
  CHECK(cache.Find("a").has_value());  // a is now more recent than b
  cache.GetOrCompile("c", Compiles("C", 40), nullptr);
  CHECK(!cache.Find("b").has_value());
  CHECK(cache.Find("a").has_value() && cache.Find("c").has_value());
  xg2::CompileCacheStats stats = cache.stats();
  CHECK_EQ(stats.entries, size_t{2});
  CHECK_EQ(stats.bytes, size_t{80});
  CHECK_EQ(stats.evictions, uint64_t{1});
  CHECK_EQ(stats.limit_bytes, int64_t{100});

  // A value larger than the whole bound is returned and not stored; nothing is evicted for it.
  Value huge = cache.GetOrCompile("huge", Compiles("H", 101), nullptr);
  CHECK_EQ(*huge, std::string("H"));
  CHECK(!cache.Find("huge").has_value());
  CHECK_EQ(cache.stats().entries, size_t{2});

  // One value may take the whole bound: everything older goes.
  cache.GetOrCompile("full", Compiles("F", 100), nullptr);
  CHECK_EQ(cache.stats().entries, size_t{1});
  CHECK_EQ(cache.stats().bytes, size_t{100});

  cache.Clear();
  CHECK_EQ(cache.stats().entries, size_t{0});
  CHECK_EQ(cache.stats().bytes, size_t{0});
}

// A compile of `text` charged `bytes` that holds the shared part `part_key` charged `part_bytes`.
Cache::Compile HoldsPart(const std::string& text, size_t bytes, const std::string& part_key, size_t part_bytes,
                         int* part_evictions) {
  return [=](const CancellationToken*) {
    Cache::SharedPart part{part_key, part_bytes, [part_evictions] { ++*part_evictions; }};
    return Cache::Built{std::make_shared<const std::string>(text), bytes, std::move(part)};
  };
}

TEST(CompileCacheSharedPartIsChargedOnceAndEvictedWithItsHolders) {
  Cache cache(100, true);
  int part_evictions = 0;
  cache.GetOrCompile("g1", HoldsPart("G1", 10, "v", 50, &part_evictions), nullptr);
  cache.GetOrCompile("g2", HoldsPart("G2", 10, "v", 50, &part_evictions), nullptr);
  CHECK_EQ(cache.stats().bytes, size_t{70});  // the part is charged once
  CHECK_EQ(cache.stats().entries, size_t{2});
  CHECK_EQ(cache.stats().shared_parts, size_t{1});
  CHECK(cache.Find("g1").has_value());  // order now g1, v, g2 (the part just behind its holder)
  cache.GetOrCompile("x", Compiles("X", 20), nullptr);
  cache.GetOrCompile("y", Compiles("Y", 20), nullptr);
  // Past the bound the oldest goes: g2, a holder; its part stays for g1.
  CHECK(!cache.Find("g2").has_value());
  CHECK_EQ(cache.stats().bytes, size_t{100});
  CHECK_EQ(cache.stats().shared_parts, size_t{1});
  CHECK_EQ(part_evictions, 0);
  // g1 was not touched since: the part is now oldest and takes its holder g1 with it.
  CHECK(cache.Find("x").has_value() && cache.Find("y").has_value());
  cache.GetOrCompile("z", Compiles("Z", 20), nullptr);
  CHECK(!cache.Find("g1").has_value());
  CHECK_EQ(part_evictions, 1);
  xg2::CompileCacheStats stats = cache.stats();
  CHECK_EQ(stats.entries, size_t{3});
  CHECK_EQ(stats.shared_parts, size_t{0});
  CHECK_EQ(stats.bytes, size_t{60});
  CHECK_EQ(stats.evictions, uint64_t{2});

  cache.GetOrCompile("g3", HoldsPart("G3", 10, "w", 10, &part_evictions), nullptr);
  cache.Clear();
  CHECK_EQ(part_evictions, 2);  // a cleared part is released like an evicted one
  CHECK_EQ(cache.stats().bytes, size_t{0});
  CHECK_EQ(cache.stats().shared_parts, size_t{0});
}

TEST(CompileCacheHitsDoNotCompileAgainAndDisabledStoresNothing) {
  std::atomic<int> runs{0};
  Cache unbounded(-1, true);
  Value first = unbounded.GetOrCompile("k", Compiles("V", size_t{1} << 40, &runs), nullptr);
  Value second = unbounded.GetOrCompile("k", Compiles("other", 1, &runs), nullptr);
  CHECK(first == second);
  CHECK_EQ(runs.load(), 1);
  CHECK_EQ(unbounded.stats().hits, uint64_t{1});
  CHECK_EQ(unbounded.stats().misses, uint64_t{1});

  runs = 0;
  Cache disabled(-1, false);
  disabled.GetOrCompile("k", Compiles("V", 1, &runs), nullptr);
  disabled.GetOrCompile("k", Compiles("V", 1, &runs), nullptr);
  CHECK_EQ(runs.load(), 2);
  CHECK_EQ(disabled.stats().entries, size_t{0});
}

TEST(CompileCacheWaitersJoinOneCompileInFlight) {
  Cache cache(-1, true);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  constexpr int kCallers = 6;
  std::vector<Value> got(kCallers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] { got[i] = cache.GetOrCompile("k", Blocks("V", release, started), nullptr); });
  }
  WaitUntil([&] { return cache.stats().hits + cache.stats().misses == kCallers; });
  CHECK_EQ(cache.in_flight(), size_t{1});
  release = true;
  for (std::thread& thread : threads) thread.join();
  CHECK_EQ(started.load(), 1);
  for (const Value& value : got) CHECK(value == got[0]);
  CHECK_EQ(cache.in_flight(), size_t{0});
  CHECK_EQ(cache.stats().misses, uint64_t{1});
}

TEST(CompileCacheErrorReachesItsWaitersAndIsNotStored) {
  Cache cache(-1, true);
  std::atomic<bool> release{false};
  std::atomic<int> runs{0};
  auto fails = [&](const CancellationToken*) -> Cache::Built {
    ++runs;
    while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    throw xg2::Error("bad grammar");
  };
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      try {
        cache.GetOrCompile("k", fails, nullptr);
      } catch (const xg2::Error& error) {
        if (std::string(error.what()) == "bad grammar") ++errors;
      }
    });
  }
  WaitUntil([&] { return cache.stats().hits + cache.stats().misses == 3; });
  release = true;
  for (std::thread& thread : threads) thread.join();
  CHECK_EQ(runs.load(), 1);
  CHECK_EQ(errors.load(), 3);
  CHECK_EQ(cache.stats().entries, size_t{0});
  CHECK_EQ(cache.in_flight(), size_t{0});
  // The key is not poisoned: the next request compiles again.
  Value again = cache.GetOrCompile("k", Compiles("V", 1, &runs), nullptr);
  CHECK_EQ(*again, std::string("V"));
  CHECK_EQ(runs.load(), 2);
}

TEST(CompileCacheCancelledRunnerHandsTheCompileToAWaiter) {
  Cache cache(-1, true);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  CancellationToken runner_token;
  bool runner_cancelled = false;
  std::thread runner([&] {
    try {
      cache.GetOrCompile("k", Blocks("V", release, started), &runner_token);
    } catch (const CompilationCancelledError&) {
      runner_cancelled = true;
    }
  });
  WaitUntil([&] { return started.load() == 1; });
  Value waited;
  std::thread waiter([&] { waited = cache.GetOrCompile("k", Blocks("V", release, started), nullptr); });
  WaitUntil([&] { return cache.stats().hits == 1; });
  runner_token.Cancel();
  runner.join();
  CHECK(runner_cancelled);
  WaitUntil([&] { return started.load() == 2; });  // the waiter took over with a fresh compile
  release = true;
  waiter.join();
  CHECK(waited != nullptr && *waited == "V");
  CHECK(cache.Find("k").has_value());
  CHECK_EQ(cache.in_flight(), size_t{0});
}

TEST(CompileCacheWaitersTimeoutLeavesTheCompileRunning) {
  Cache cache(-1, true);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  Value ran;
  std::thread runner([&] { ran = cache.GetOrCompile("k", Blocks("V", release, started), nullptr); });
  WaitUntil([&] { return started.load() == 1; });
  CancellationToken hasty;
  hasty.SetTimeout(0.01);
  CHECK_THROWS(cache.GetOrCompile("k", Blocks("V", release, started), &hasty), CompilationTimeoutError,
               "timed out");
  CancellationToken cancelled;
  cancelled.Cancel();
  CHECK_THROWS(cache.GetOrCompile("k", Blocks("V", release, started), &cancelled), CompilationCancelledError,
               "cancelled");
  CHECK_EQ(cache.in_flight(), size_t{1});
  release = true;
  runner.join();
  CHECK_EQ(started.load(), 1);
  CHECK(ran != nullptr && cache.Find("k").has_value());
}

TEST(CompileCacheResetAfterForkDropsOrphanedCompiles) {
  Cache cache(-1, true);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  cache.GetOrCompile("kept", Compiles("K", 1), nullptr);
  std::thread orphan([&] { cache.GetOrCompile("k", Blocks("old", release, started), nullptr); });
  WaitUntil([&] { return started.load() == 1; });
  cache.ResetAfterFork();  // as in a child, where the orphan's thread would not exist
  CHECK_EQ(cache.in_flight(), size_t{0});
  CHECK(cache.Find("kept").has_value());
  // A new caller compiles instead of waiting for the orphan.
  std::atomic<bool> release_new{false};
  Value fresh;
  std::thread caller([&] { fresh = cache.GetOrCompile("k", Blocks("new", release_new, started), nullptr); });
  WaitUntil([&] { return started.load() == 2; });
  release = true;  // the orphan finishing must not remove the new compile's entry
  orphan.join();
  CHECK_EQ(cache.in_flight(), size_t{1});
  release_new = true;
  caller.join();
  CHECK(fresh != nullptr && *fresh == "new");
  CHECK_EQ(cache.in_flight(), size_t{0});
}

TEST(CompileCacheManyThreadsKeepItsAccounts) {
  constexpr int kThreads = 8;
  constexpr int kRequests = 300;
  constexpr int kKeys = 12;
  Cache cache(50, true);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRequests; ++i) {
        const std::string key = std::to_string((i * 7 + t) % kKeys);
        CancellationToken token;
        if (i % 5 == 0) token.CancelAfterChecks(0);
        const bool fails = key == "3";
        auto compile = [key, fails](const CancellationToken* cancel) -> Cache::Built {
          if (cancel != nullptr) cancel->Check(false);
          if (fails) throw xg2::Error("fails");
          std::optional<Cache::SharedPart> part;
          if (key == "1" || key == "2") part = Cache::SharedPart{"part", 7, nullptr};
          return Cache::Built{std::make_shared<const std::string>(key), key.size() * 5, std::move(part)};
        };
        try {
          Value value = cache.GetOrCompile(key, compile, &token);
          if (*value != key) ++wrong;
        } catch (const CompilationCancelledError&) {
        } catch (const xg2::Error&) {
          if (!fails) ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK_EQ(wrong.load(), 0);
  xg2::CompileCacheStats stats = cache.stats();
  CHECK_EQ(stats.hits + stats.misses, uint64_t{kThreads * kRequests});
  CHECK(stats.bytes <= 50);
  CHECK_EQ(cache.in_flight(), size_t{0});
  CHECK(!cache.Find("3").has_value());
}

}  // namespace
