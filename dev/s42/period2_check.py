#!/usr/bin/env python3
"""Checks the design of dev/s42/README.md (numpy, float64): for one channel, WTConv's base conv
plus its level-0 branch (docs: ../shared/docs/wtconv.md) equals one convolution whose 11 x 11
kernel depends on the output pixel's row and column parity (K = 5), plus bias and half the
levels >= 1 term R (on level 0's grid) at each pixel, exactly, odd sizes and borders included.
Usage: python3 dev/s42/period2_check.py"""
import numpy as np


def conv_same(x, w):  # cross-correlation, zero padding K // 2 (PyTorch / cuDNN)
    K = w.shape[0]
    r = K // 2
    xp = np.pad(x, r)
    return sum(w[p, q] * xp[p:p + x.shape[0], q:q + x.shape[1]] for p in range(K) for q in range(K))


def haar(x):  # 4 bands of the 2 x 2 blocks, x zero padded to even sizes
    x = np.pad(x, ((0, x.shape[0] % 2), (0, x.shape[1] % 2)))
    a, b, c, d = x[0::2, 0::2], x[0::2, 1::2], x[1::2, 0::2], x[1::2, 1::2]
    return np.stack([a + b + c + d, a + b - c - d, a - b + c - d, a - b - c + d]) / 2


def ihaar(t, h, w):  # the transpose, cropped to h x w
    s0, s1, s2, s3 = t
    y = np.zeros((2 * t.shape[1], 2 * t.shape[2]))
    y[0::2, 0::2] = (s0 + s1 + s2 + s3) / 2
    y[0::2, 1::2] = (s0 + s1 - s2 - s3) / 2
    y[1::2, 0::2] = (s0 - s1 + s2 - s3) / 2
    y[1::2, 1::2] = (s0 - s1 - s2 + s3) / 2
    return y[:h, :w]


def reference(x, wb, bias, wl, R):  # scales folded into wb, wl
    t = np.stack([conv_same(c, wl[s]) for s, c in enumerate(haar(x))])
    t[0] += R
    return conv_same(x, wb) + bias + ihaar(t, *x.shape)


def parity_kernels(wb, wl, K):
    """E[p][q][5 + di][5 + dj]: the weight of x[i + di][j + dj] in y[i][j], i % 2 = p, j % 2 = q,
    read off as impulse responses away from the borders."""
    r = 2 * (K // 2) + 1  # 5 at K = 5: the window [-r, r]
    n = 4 * r + 8
    E = np.zeros((2, 2, 2 * r + 1, 2 * r + 1))
    zero = np.zeros(((n + 1) // 2, (n + 1) // 2))
    for di in range(-r, r + 1):
        for dj in range(-r, r + 1):
            for p in range(2):
                for q in range(2):
                    i, j = 2 * r + 2 + p, 2 * r + 2 + q  # an interior pixel of parity (p, q)
                    x = np.zeros((n, n))
                    x[i + di, j + dj] = 1
                    E[p, q, r + di, r + dj] = reference(x, wb, 0, wl, zero)[i, j]
    return E, r


def period2(x, E, r, bias, R):
    H, W = x.shape
    xp = np.pad(x, r)
    y = np.zeros((H, W))
    for i in range(H):
        for j in range(W):
            win = xp[i:i + 2 * r + 1, j:j + 2 * r + 1]
            y[i, j] = (E[i % 2, j % 2] * win).sum() + bias + R[i // 2, j // 2] / 2
    return y


rng = np.random.default_rng(0)
K = 5
wb, wl = rng.standard_normal((K, K)), rng.standard_normal((4, K, K))
E, r = parity_kernels(wb, wl, K)
worst = 0.0
for H, W in [(14, 14), (13, 11), (7, 9), (28, 27)]:
    x = rng.standard_normal((H, W))
    R = rng.standard_normal(((H + 1) // 2, (W + 1) // 2))
    ref = reference(x, wb, 0.3, wl, R)
    worst = max(worst, np.abs(period2(x, E, r, 0.3, R) - ref).max() / np.abs(ref).max())
edge = min(float(np.abs(E[:, :, k, :]).max() + np.abs(E[:, :, :, k]).max()) for k in (0, 2 * r))
print(f"window [-{r}, {r}] (its edge rows and columns are used: {edge > 0}); "
      f"max relative error against the reference order {worst:.1e}")
assert worst < 1e-12
