//! Cheap float searches for a selecting query. Their answers are candidates only: every one
//! is verified exactly before it becomes a certificate.

/// Keys in plain f64 (possibly a scaled or approximated copy), for the float stages.
#[derive(Debug, Clone, Copy)]
pub struct FloatKeys<'a> {
    pub data: &'a [f64],
    pub bias: Option<&'a [f64]>,
    pub n: usize,
    pub d: usize,
}

impl<'a> FloatKeys<'a> {
    pub fn key(&self, j: usize) -> &'a [f64] {
        &self.data[j * self.d..(j + 1) * self.d]
    }

    pub fn bias(&self, j: usize) -> f64 {
        self.bias.map_or(0.0, |b| b[j])
    }

    /// v·h_j + b_j in plain f64.
    pub fn score(&self, v: &[f64], j: usize) -> f64 {
        v.iter().zip(self.key(j)).map(|(a, b)| a * b).sum::<f64>() + self.bias(j)
    }

    /// The index of the highest float score, ties to the lowest index except that `prefer`
    /// loses every tie (a tie is not a selection).
    pub fn argmax(&self, v: &[f64], prefer: usize) -> usize {
        let mut best = prefer;
        let mut best_score = self.score(v, prefer);
        for j in (0..self.n).filter(|&j| j != prefer) {
            let s = self.score(v, j);
            if s >= best_score && (best == prefer || s > best_score) {
                best = j;
                best_score = s;
            }
        }
        best
    }
}

/// Braid-Reflect (Grivas et al. 2022): start from the key itself; while another key j wins,
/// reflect the query across the hyperplane where keys i and j tie,
/// x ← x − 2((h_i − h_j)·x + b_i − b_j)/‖h_i − h_j‖² · (h_i − h_j); give up after `patience`
/// reflections. Returns a query under which key i wins in float arithmetic; the keys that
/// won along the way are appended to `winners` (they are where an LP should look first).
pub fn braid_reflect(
    keys: &FloatKeys,
    i: usize,
    patience: usize,
    winners: &mut Vec<usize>,
) -> Option<Vec<f64>> {
    let mut x = keys.key(i).to_vec();
    let hi = keys.key(i);
    for _ in 0..=patience {
        let j = keys.argmax(&x, i);
        if j == i {
            return Some(x);
        }
        if !winners.contains(&j) {
            winners.push(j);
        }
        let hj = keys.key(j);
        let a: Vec<f64> = hi.iter().zip(hj).map(|(p, q)| p - q).collect();
        let norm2: f64 = a.iter().map(|t| t * t).sum();
        if norm2 == 0.0 || !norm2.is_finite() {
            return None;
        }
        let c = keys.bias(i) - keys.bias(j);
        let t = 2.0 * (a.iter().zip(&x).map(|(p, q)| p * q).sum::<f64>() + c) / norm2;
        for (xk, ak) in x.iter_mut().zip(&a) {
            *xk -= t * ak;
        }
        if x.iter().any(|v| !v.is_finite()) {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braid_reflect_finds_a_vertex_the_key_itself_misses() {
        // Key 0 = (1, 0) is a vertex of the triangle but loses to the long key (3, 3) under
        // its own query: 1·1 < 1·3.
        let data = [1.0, 0.0, 3.0, 3.0, -1.0, 0.5];
        let keys = FloatKeys {
            data: &data,
            bias: None,
            n: 3,
            d: 2,
        };
        assert_ne!(keys.argmax(keys.key(0), 0), 0);
        let x = braid_reflect(&keys, 0, 10, &mut Vec::new()).expect("a vertex is found");
        assert_eq!(keys.argmax(&x, 0), 0);
    }

    #[test]
    fn braid_reflect_gives_up_inside_the_hull() {
        let data = [0.0, 0.0, 1.0, 0.0, -1.0, 1.0, -1.0, -1.0];
        let keys = FloatKeys {
            data: &data,
            bias: None,
            n: 4,
            d: 2,
        };
        let mut winners = Vec::new();
        assert_eq!(braid_reflect(&keys, 0, 50, &mut winners), None);
        assert!(!winners.is_empty() && !winners.contains(&0));
    }
}
