"""fit_math.py: the polynomial coefficients of runtime_c/mica_math.c
(kept in runtime_c/mica_math_consts.h, shared with the array forms).

Takes nothing; prints, for every polynomial in mica_math.c, its coefficients
as C hex-float literals (already rounded to the working precision) and the
weighted error of the rounded polynomial. Run it to check or regenerate the
constants:

    python tools/fit_math.py

Each fit is a minimax (Remez exchange) approximation of F(t) on [0, b] by
p(t) = c0 + c1*t + ... (or a chosen set of powers), minimizing
max |w(t) * (F(t) - p(t))|, computed in 160-bit mpmath arithmetic.

The sin and cos fits round their coefficients one at a time, lowest power
first, refitting the rest around each rounded one (report_rounded): rounding
-1/6 or 1/24 on its own would cost sin64 1.5 bits and cos64 4.

It also prints the other constants of sin and cos: pi/2 in Cody-Waite parts,
pi/2 and 2/pi rounded, and the words of 2/pi for Payne-Hanek.
"""

import mpmath
from mpmath import mp, mpf

mp.prec = 160

GRID = 3000


def grid(a, b):
    """Chebyshev-spaced sample points: dense near both ends, where extrema crowd."""
    pts = []
    for i in range(GRID + 1):
        c = mpmath.cos(mpmath.pi * i / GRID)
        pts.append(a + (b - a) * (1 - c) / 2)
    return pts


def solve_reference(f, w, powers, ref):
    """p(t_j) + (-1)^j E / w(t_j) = F(t_j) at the n+1 reference points."""
    n = len(powers)
    A = mpmath.matrix(n + 1, n + 1)
    rhs = mpmath.matrix(n + 1, 1)
    for j, t in enumerate(ref):
        for i, e in enumerate(powers):
            A[j, i] = t**e
        A[j, n] = (-1) ** j / w(t)
        rhs[j] = f(t)
    sol = mpmath.lu_solve(A, rhs)
    return [sol[i] for i in range(n)], sol[n]


def evaluate(coeffs, powers, t):
    return mpmath.fsum(c * t**e for c, e in zip(coeffs, powers))


def extrema(errs, pts, count):
    """One extremum per run of constant sign; keep `count` consecutive runs around the largest."""
    runs = []
    for i, e in enumerate(errs):
        if e == 0:
            continue
        s = e > 0
        if runs and runs[-1][0] == s:
            if abs(e) > abs(runs[-1][1]):
                runs[-1] = (s, e, pts[i])
        else:
            runs.append((s, e, pts[i]))
    while len(runs) > count:
        # Drop the smaller end run: the survivors still alternate.
        if abs(runs[0][1]) < abs(runs[-1][1]):
            runs.pop(0)
        else:
            runs.pop()
    return [r[2] for r in runs], max(abs(r[1]) for r in runs)


def remez(f, w, powers, a, b, iterations=30):
    pts = grid(a, b)
    fv = [f(t) for t in pts]
    wv = [w(t) for t in pts]
    n = len(powers)
    ref = [a + (b - a) * (1 - mpmath.cos(mpmath.pi * (j + 0.5) / (n + 1))) / 2 for j in range(n + 1)]
    coeffs = None
    for _ in range(iterations):
        coeffs, level = solve_reference(f, w, powers, ref)
        errs = [wt * (ft - evaluate(coeffs, powers, t)) for t, ft, wt in zip(pts, fv, wv)]
        new_ref, worst = extrema(errs, pts, n + 1)
        if len(new_ref) < n + 1:
            break
        ref = new_ref
        if worst <= abs(level) * (1 + mpf(2) ** -20):
            break
    return coeffs


def round_to(x, bits):
    """Round an mpf to `bits` significant bits (53: double, 24: float)."""
    m, e = mpmath.frexp(x)
    return mpmath.ldexp(mpmath.nint(mpmath.ldexp(m, bits)), e - bits)


def hexlit(x, bits):
    v = float(round_to(x, bits))
    h = v.hex()
    mant, exp = h.split("p")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    return mant + "p" + exp + ("f" if bits == 24 else "")


def max_error(f, w, powers, coeffs, a, b):
    pts = grid(a, b)
    return max(abs(w(t) * (f(t) - evaluate(coeffs, powers, t))) for t in pts)


def report(name, f, w, powers, a, b, bits):
    coeffs = remez(f, w, powers, a, b)
    rounded = [round_to(c, bits) for c in coeffs]
    err = max_error(f, w, powers, rounded, a, b)
    print(f"{name}: t in [0, {mpmath.nstr(b, 6)}], weighted error 2^{mpmath.nstr(mpmath.log(err, 2), 5)}")
    for e, c in zip(powers, rounded):
        print(f"    t^{e}: {hexlit(c, bits)}  /* {mpmath.nstr(c, 20)} */")


def report_rounded(name, f, w, powers, a, b, bits):
    """Like report, but each coefficient is rounded in turn, lowest power first,
    and the higher ones refitted to F minus the rounded ones."""
    fixed = []
    for i in range(len(powers)):
        done = list(fixed)

        def rest(t, done=done):
            return f(t) - evaluate(done, powers[:len(done)], t)

        fixed.append(round_to(remez(rest, w, powers[i:], a, b)[0], bits))
    err = max_error(f, w, powers, fixed, a, b)
    print(f"{name}: t in [0, {mpmath.nstr(b, 6)}], weighted error 2^{mpmath.nstr(mpmath.log(err, 2), 5)}")
    for e, c in zip(powers, fixed):
        print(f"    t^{e}: {hexlit(c, bits)}  /* {mpmath.nstr(c, 20)} */")


# exp: x = k*ln2 + r, |r| <= ln2/2 (a little more: k is rounded from x/ln2).
# R(r) = r*(e^r + 1)/(e^r - 1) = 2 + t*P(t), t = r^2. Weight t: the error of R itself.
def exp_P(t):
    if t == 0:
        return mpf(1) / 6
    r = mpmath.sqrt(t)
    return (r * (mpmath.exp(r) + 1) / (mpmath.expm1(r)) - 2) / t


# log: 1+f = (1+s)/(1-s), log(1+f) = 2s + s*R(z), z = s^2, 0 <= s <= 3-2*sqrt(2).
def log_R(z):
    if z == 0:
        return mpf(0)
    s = mpmath.sqrt(z)
    return (mpmath.log((1 + s) / (1 - s)) - 2 * s) / s


def odd_series(f, lead):
    """P and its weight for an odd f(x) = x + x^3 * P(x^2), fitted for f's relative
    error; lead is P(0)."""
    def P(t):
        if t == 0:
            return lead
        x = mpmath.sqrt(t)
        return (f(x) / x - 1) / t

    def w(t):
        if t == 0:
            return mpf(0)
        x = mpmath.sqrt(t)
        return t * x / f(x)

    return P, w


# tanh for |x| <= 0.55; sin's P(t) = S1 + S2*t + ... on the reduced argument.
tanh_P, tanh_w = odd_series(mpmath.tanh, mpf(-1) / 3)
sin_P, sin_w = odd_series(mpmath.sin, mpf(-1) / 6)


# cos: cos(r) = 1 - r^2/2 + r^4 * Q(r^2); weight: relative error of cos.
def cos_Q(t):
    if t == 0:
        return mpf(1) / 24
    r = mpmath.sqrt(t)
    return (mpmath.cos(r) - 1 + t / 2) / t**2


def cos_w(t):
    return t**2 / mpmath.cos(mpmath.sqrt(t))


def trig_constants():
    """pi/2 in Cody-Waite parts, each rounded to nearest from what the earlier
    ones leave: 33-bit parts (k*P exact for |k| < 2^20) then a full double;
    9-bit parts (|k| < 2^15) then a full float. Also pi/2, pi/4, 2/pi rounded
    and 2/pi's first 1216 bits as 64-bit words."""
    with mpmath.workprec(1400):
        pio2 = mpmath.pi / 2
        for name, part_bits, bits in (("f64", [33, 33, 33, 53], 53), ("f32", [9, 9, 9, 9, 9, 24], 24)):
            rem, parts = pio2, []
            for pb in part_bits:
                c = round_to(rem, pb)
                parts.append(hexlit(c, bits))
                rem = rem - c
            print(f"PIO2_CW_{name}: {', '.join(parts)}  (left over: 2^{mpmath.nstr(mpmath.log(abs(rem), 2), 5)})")
            hi = round_to(pio2, bits)
            print(f"PIO2_HI_{name}, PIO2_LO_{name}: {hexlit(hi, bits)}, {hexlit(pio2 - hi, bits)}")
            print(f"PIO4_{name}: {hexlit(pio2 / 2, bits)}   INV_PIO2_{name}: {hexlit(1 / pio2, bits)}")
        words = int(mpmath.floor(2 / mpmath.pi * mpf(2) ** (64 * 19)))
        print("TWO_OVER_PI (after a zero word):")
        for i in range(19):
            print(f"    0x{(words >> (64 * (18 - i))) & (2**64 - 1):016x}")


R_MAX = mpf("0.3466")  # ln2/2 = 0.34657...
S_MAX = 3 - 2 * mpmath.sqrt(2)
TANH_SMALL = mpf("0.55")
SIN_R64 = mpf("0.7854")  # pi/4 = 0.785398..., and Cody-Waite's k may be off by one rounding
SIN_R32 = mpf("0.79")  # ... by more in float: |r| <= pi/4 + 0.0029

if __name__ == "__main__":
    report("exp_f64 P", exp_P, lambda t: t, [0, 1, 2, 3, 4], 0, R_MAX**2, 53)
    report("exp_f32 P", exp_P, lambda t: t, [0, 1], 0, R_MAX**2, 24)
    report("log_f64 R", log_R, lambda z: mpf(1), [1, 2, 3, 4, 5, 6, 7], 0, S_MAX**2, 53)
    report("log_f32 R", log_R, lambda z: mpf(1), [1, 2, 3, 4], 0, S_MAX**2, 24)
    report("tanh_f64 P", tanh_P, tanh_w, list(range(11)), 0, TANH_SMALL**2, 53)
    report("tanh_f32 P", tanh_P, tanh_w, list(range(5)), 0, TANH_SMALL**2, 24)
    report_rounded("sin_f64 S", sin_P, sin_w, list(range(6)), 0, SIN_R64**2, 53)
    report_rounded("sin_f32 S", sin_P, sin_w, list(range(4)), 0, SIN_R32**2, 24)
    report_rounded("cos_f64 C", cos_Q, cos_w, list(range(6)), 0, SIN_R64**2, 53)
    report_rounded("cos_f32 C", cos_Q, cos_w, list(range(3)), 0, SIN_R32**2, 24)
    trig_constants()
