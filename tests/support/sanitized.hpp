// PG_TEST_SANITIZED: 1 in a build under AddressSanitizer or ThreadSanitizer (gcc says so with
// __SANITIZE_*, clang with __has_feature), for the tests whose setting the sanitizers' runtime
// changes (their own signal handlers, their shadow address space).
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PG_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PG_TEST_SANITIZED 1
#endif
#endif
#ifndef PG_TEST_SANITIZED
#define PG_TEST_SANITIZED 0
#endif
