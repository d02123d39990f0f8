// The Llama family's row kernels (RMSNorm, rotary positions, the SwiGLU gate): the scalar
// reference against the formulas in double (and its gradients against finite differences),
// then every kernel table against the reference.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_tables_under_test.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/reference/reference_kernels.hpp"

namespace ref = pg::kernels::reference;

namespace {

std::vector<float> random_values(std::size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

const int kWidths[] = {1, 2, 3, 4, 7, 8, 15, 16, 17, 33, 64, 129};

// Row r's RoPE angles for positions 3 + r at Hugging Face's inverse frequencies theta^(-2i/d).
void angles(std::vector<float>& c, std::vector<float>& s, int rows, int head_dim, double theta) {
    const int half = head_dim / 2;
    c.assign(std::size_t(rows) * half, 0.0f);
    s.assign(c.size(), 0.0f);
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < half; ++i) {
            const double a = (3 + r) * std::pow(theta, -2.0 * i / head_dim);
            c[std::size_t(r) * half + i] = float(std::cos(a));
            s[std::size_t(r) * half + i] = float(std::sin(a));
        }
}

}  // namespace

TEST_CASE("the RMSNorm reference is x / rms(x) * w and its backward is the gradient", "[kernels][families]") {
    const int rows = 2, C = 9;
    const float eps = 1e-5f;
    const auto x = random_values(rows * C, 1, -2.0f, 2.0f), w = random_values(C, 2), dout = random_values(rows * C, 3);
    std::vector<float> out(x.size()), rstd(rows);
    ref::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), rows, C, eps);
    auto loss = [&](const std::vector<double>& xd, const std::vector<double>& wd) {
        double l = 0.0;
        for (int r = 0; r < rows; ++r) {
            double ss = 0.0;
            for (int i = 0; i < C; ++i) ss += xd[r * C + i] * xd[r * C + i];
            const double s = 1.0 / std::sqrt(ss / C + eps);
            for (int i = 0; i < C; ++i) l += dout[r * C + i] * xd[r * C + i] * s * wd[i];
        }
        return l;
    };
    std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end());
    for (int r = 0; r < rows; ++r) {
        double ss = 0.0;
        for (int i = 0; i < C; ++i) ss += xd[r * C + i] * xd[r * C + i];
        const double s = 1.0 / std::sqrt(ss / C + eps);
        CHECK(rstd[r] == Approx(s).epsilon(1e-6));
        for (int i = 0; i < C; ++i) CHECK(out[r * C + i] == Approx(xd[r * C + i] * s * wd[i]).margin(1e-6));
    }
    std::vector<float> dx(x.size(), 0.5f), dw(C, -0.25f);  // accumulates onto what is there
    ref::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), rows, C);
    const double h = 1e-6;
    for (int j = 0; j < rows * C; ++j) {
        auto p = xd, m = xd;
        p[j] += h;
        m[j] -= h;
        CHECK(dx[j] - 0.5f == Approx((loss(p, wd) - loss(m, wd)) / (2 * h)).margin(1e-5));
    }
    for (int i = 0; i < C; ++i) {
        auto p = wd, m = wd;
        p[i] += h;
        m[i] -= h;
        CHECK(dw[i] + 0.25f == Approx((loss(xd, p) - loss(xd, m)) / (2 * h)).margin(1e-5));
    }
}

TEST_CASE("the RoPE reference rotates halves and its backward is the transpose", "[kernels][families]") {
    const int rows = 3, heads = 2, hd = 8, half = hd / 2;
    const int64_t ld = heads * hd + 5;  // rows of a wider buffer, as q inside a projection's output
    std::vector<float> c, s;
    angles(c, s, rows, hd, 10000.0);
    const auto x0 = random_values(std::size_t(rows) * ld, 4);
    auto x = x0;
    ref::rope_forward(x.data(), ld, c.data(), s.data(), rows, heads, hd);
    for (int r = 0; r < rows; ++r) {
        for (int j = heads * hd; j < ld; ++j) CHECK(x[r * ld + j] == x0[r * ld + j]);  // outside the heads
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < hd; ++i) {
                // Hugging Face: q * cos + rotate_half(q) * sin, rotate_half(q) = (-q2, q1).
                const int k = i % half;
                const double cs = c[r * half + k], sn = s[r * half + k];
                const double self = x0[r * ld + h * hd + i];
                const double rot = i < half ? -x0[r * ld + h * hd + i + half] : x0[r * ld + h * hd + i - half];
                CHECK(x[r * ld + h * hd + i] == Approx(self * cs + rot * sn).margin(1e-6));
            }
    }
    // <R x, y> = <x, R^T y>, and R^T R = 1.
    const auto y0 = random_values(x0.size(), 5);
    auto y = y0;
    ref::rope_backward(y.data(), ld, c.data(), s.data(), rows, heads, hd);
    double lhs = 0.0, rhs = 0.0;
    for (std::size_t i = 0; i < x0.size(); ++i) {
        lhs += double(x[i]) * y0[i];
        rhs += double(x0[i]) * y[i];
    }
    CHECK(lhs == Approx(rhs).epsilon(1e-6));
    ref::rope_backward(x.data(), ld, c.data(), s.data(), rows, heads, hd);
    for (std::size_t i = 0; i < x0.size(); ++i) CHECK(x[i] == Approx(x0[i]).margin(1e-6));
}

TEST_CASE("the SwiGLU gate reference is silu(gate) * up with its derivatives", "[kernels][families]") {
    const int n = 41;
    const auto g = random_values(n, 6, -8.0f, 8.0f), u = random_values(n, 7, -2.0f, 2.0f), d = random_values(n, 8);
    std::vector<float> out(n), dg(n), du(n);
    ref::swiglu_forward(out.data(), g.data(), u.data(), n);
    ref::swiglu_backward(dg.data(), du.data(), g.data(), u.data(), d.data(), n);
    auto f = [](double gv, double uv) { return gv / (1.0 + std::exp(-gv)) * uv; };
    const double h = 1e-6;
    for (int i = 0; i < n; ++i) {
        CHECK(out[i] == Approx(f(g[i], u[i])).margin(1e-6));
        CHECK(dg[i] == Approx(d[i] * (f(g[i] + h, u[i]) - f(g[i] - h, u[i])) / (2 * h)).margin(1e-5));
        CHECK(du[i] == Approx(d[i] * (f(g[i], u[i] + h) - f(g[i], u[i] - h)) / (2 * h)).margin(1e-5));
    }
}

TEST_CASE("RMSNorm, RoPE and SwiGLU kernels of every table match the reference", "[kernels][families]") {
    for (const auto* t : pg::test::kernel_tables_under_test()) {
        for (int C : kWidths) {
            CAPTURE(t->name, C);
            const int rows = 3;
            const auto x = random_values(std::size_t(rows) * C, 11, -2.0f, 3.0f), w = random_values(C, 12);
            std::vector<float> out(x.size()), rstd(rows), out_r(x.size()), rstd_r(rows);
            t->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), rows, C, 1e-6f);
            ref::rmsnorm_forward(out_r.data(), rstd_r.data(), x.data(), w.data(), rows, C, 1e-6f);
            for (int r = 0; r < rows; ++r) CHECK(rstd[r] == Approx(rstd_r[r]).epsilon(1e-5));
            for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(out_r[i]).margin(1e-5).epsilon(1e-5));
            const auto dout = random_values(x.size(), 13);
            auto dx = random_values(x.size(), 14), dw = random_values(C, 15);
            auto dx_r = dx, dw_r = dw;
            t->rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd_r.data(), rows, C);
            ref::rmsnorm_backward(dx_r.data(), dw_r.data(), dout.data(), x.data(), w.data(), rstd_r.data(), rows, C);
            for (std::size_t i = 0; i < dx.size(); ++i) CHECK(dx[i] == Approx(dx_r[i]).margin(1e-5).epsilon(1e-5));
            for (int i = 0; i < C; ++i) CHECK(dw[i] == Approx(dw_r[i]).margin(1e-5).epsilon(1e-5));

            // SwiGLU on C elements: the fast sigmoid's absolute error <= 2e-7 (fast_math.hpp).
            const auto g = random_values(C, 16, -10.0f, 10.0f), u = random_values(C, 17, -2.0f, 2.0f);
            std::vector<float> s(C), s_r(C), dg(C), du(C), dg_r(C), du_r(C);
            t->swiglu_forward(s.data(), g.data(), u.data(), C);
            ref::swiglu_forward(s_r.data(), g.data(), u.data(), C);
            t->swiglu_backward(dg.data(), du.data(), g.data(), u.data(), dout.data(), C);
            ref::swiglu_backward(dg_r.data(), du_r.data(), g.data(), u.data(), dout.data(), C);
            for (int i = 0; i < C; ++i) {
                const float scale = 1.0f + std::fabs(g[i]);
                CHECK(std::fabs(s[i] - s_r[i]) <= 1e-6f * scale * (1.0f + std::fabs(u[i])));
                CHECK(std::fabs(dg[i] - dg_r[i]) <= 2e-6f * scale * (1.0f + std::fabs(u[i])));
                CHECK(std::fabs(du[i] - du_r[i]) <= 1e-6f * scale);
            }
        }
        // RoPE at head sizes around the vector widths, rows of a wider buffer.
        for (int hd : {2, 6, 8, 16, 18, 32, 34, 64, 128}) {
            CAPTURE(t->name, hd);
            const int rows = 4, heads = 3;
            const int64_t ld = heads * hd + 3;
            std::vector<float> c, s;
            angles(c, s, rows, hd, 1e6);
            const auto x0 = random_values(std::size_t(rows) * ld, 18);
            for (bool backward : {false, true}) {
                auto x = x0, x_r = x0;
                (backward ? t->rope_backward : t->rope_forward)(x.data(), ld, c.data(), s.data(), rows, heads, hd);
                (backward ? ref::rope_backward : ref::rope_forward)(x_r.data(), ld, c.data(), s.data(), rows, heads,
                                                                    hd);
                for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == Approx(x_r[i]).margin(1e-6));
            }
        }
    }
}
