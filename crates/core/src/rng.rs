//! The one seeded random number generator of the core: arrival schedules and workload lengths
//! are drawn from it, so a seed gives the same run whatever a dependency's version.

/// SplitMix64 (Steele, Lea and Flood 2014): small, fast and fixed forever, which is what a
/// reproducible schedule needs; its statistical quality is ample for arrival gaps.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` without modulo bias (`n` = 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Redraw the few values above the last whole multiple of n, so every residue is
        // equally likely.
        let zone = u64::MAX - (u64::MAX - n + 1) % n;
        loop {
            let x = self.next_u64();
            if x <= zone {
                return x % n;
            }
        }
    }

    /// Exponential of mean 1.
    pub(crate) fn exponential(&mut self) -> f64 {
        -self.unit().ln()
    }

    /// Standard normal (Box–Muller; one of the pair is used, which keeps the stream simple).
    pub(crate) fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma of shape `k` and scale 1 (Marsaglia and Tsang 2000; for k < 1 the boost
    /// Gamma(k) = Gamma(k + 1) · U^(1/k)).
    pub(crate) fn gamma(&mut self, k: f64) -> f64 {
        if k < 1.0 {
            let u = self.unit();
            return self.gamma(k + 1.0) * u.powf(1.0 / k);
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.unit();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}
