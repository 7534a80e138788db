#pragma once
// Recoverable errors as values: what was attempted, on what, and the errno it failed with.
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace memtrack {

struct Error {
    std::string op;      // what was attempted: "open", "bpf_link_create", ...
    std::string object;  // on what: a path, a map name, a pid
    int err = 0;         // errno, 0 when the failure has no errno
    std::string detail;  // extra words (libbpf's message, a decoder's reason)

    std::string message() const {
        std::string m = object.empty() ? op : fmt::format("{} {}", op, object);
        if (err != 0) m += fmt::format(": {}", std::strerror(err));
        if (!detail.empty()) m += fmt::format(": {}", detail);
        return m;
    }
};

inline Error errno_error(std::string op, std::string object, int err = errno) {
    return Error{std::move(op), std::move(object), err, {}};
}

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() & { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    const T& value() const& { return std::get<0>(v_); }
    T* operator->() { return &std::get<0>(v_); }
    T& operator*() & { return std::get<0>(v_); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), ok_(false) {}
    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return error_; }

private:
    Error error_;
    bool ok_ = true;
};

// A fatal start-up error: thrown, caught once in main, printed as one line.
class FatalError : public std::exception {
public:
    explicit FatalError(std::string message, int exit_code = 1)
        : message_(std::move(message)), exit_code_(exit_code) {}
    explicit FatalError(const Error& e, int exit_code = 1) : FatalError(e.message(), exit_code) {}
    const char* what() const noexcept override { return message_.c_str(); }
    int exit_code() const { return exit_code_; }

private:
    std::string message_;
    int exit_code_;
};

template <typename T>
T value_or_throw(Result<T> r) {
    if (!r.ok()) throw FatalError(r.error());
    return std::move(r).value();
}

}  // namespace memtrack
