// RunSideBySide: two pieces of work at once, errors after both.
#include "base/side_by_side.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace goheap2pprof {
namespace {

TEST(RunSideBySide, RunsBothAtOnceOnTwoThreads) {
  // Each waits for the other to have started: only work running at the same
  // time on two threads gets past this.
  std::atomic<int> started{0};
  std::thread::id here_id, there_id;
  auto meet = [&] {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  };
  RunSideBySide(
      [&] {
        here_id = std::this_thread::get_id();
        meet();
      },
      [&] {
        there_id = std::this_thread::get_id();
        meet();
      });
  EXPECT_EQ(started.load(), 2);
  EXPECT_EQ(here_id, std::this_thread::get_id());
  EXPECT_NE(there_id, here_id);
}

TEST(RunSideBySide, AnErrorOfEitherIsRethrownOnceBothAreDone) {
  bool here_done = false, there_done = false;
  EXPECT_THROW(RunSideBySide([&] { here_done = true; },
                             [&] {
                               std::this_thread::sleep_for(std::chrono::milliseconds(20));
                               there_done = true;
                               throw std::runtime_error("there");
                             }),
               std::runtime_error);
  EXPECT_TRUE(here_done);
  EXPECT_TRUE(there_done);
  there_done = false;
  try {
    RunSideBySide([] { throw std::runtime_error("here"); },
                  [&] {
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    there_done = true;
                    throw std::logic_error("there");
                  });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "here");  // here's error first
  }
  EXPECT_TRUE(there_done);
}

}  // namespace
}  // namespace goheap2pprof
