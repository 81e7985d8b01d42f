//! The warm-up design: the configurations measured before the control loop starts (paper
//! §8.5: "the first 500 ms are used to gather an initial set of datapoints"; the paper does
//! not say where). Ours: the start configuration first, then a greedy maximin design inside
//! the initial trust region around it — each next point is the one, among `CANDIDATES_PER_POINT`
//! random points of the region per point wanted, farthest from every point already chosen.
//! Points stay within the distance the controller's first step could move anyway, so the
//! warm-up risks no more than one control step, and they spread so that the residual GP sees
//! how g − f varies around the start instead of one value repeated. Pure and deterministic
//! under `seed`; feed the measurements to [`crate::Controller::warm_up`].

use crate::acquire::sample_starts;
use crate::space::Space;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Random candidates drawn per design point.
pub const CANDIDATES_PER_POINT: usize = 32;

/// `n` points (normalised coordinates): `centre` first, then greedy maximin points within
/// `radius` of it (space distance). Empty when `n` is 0.
pub fn design(space: &Space, centre: &[f64], radius: f64, n: usize, seed: u64) -> Vec<Vec<f64>> {
    if n == 0 {
        return Vec::new();
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5741_524D_5550);
    let pool: Vec<Vec<f64>> = sample_starts(space, centre, Some(radius), CANDIDATES_PER_POINT * n, &mut rng)
        .iter()
        .map(|z| space.point_of(z))
        .collect();
    let mut chosen = vec![centre.to_vec()];
    // Distance of every candidate to its nearest chosen point.
    let mut nearest: Vec<f64> = pool.iter().map(|p| space.distance(p, centre)).collect();
    while chosen.len() < n {
        let Some((i, _)) = nearest
            .iter()
            .enumerate()
            .filter(|(_, d)| d.is_finite())
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        else {
            break;
        };
        let p = pool[i].clone();
        for (d, q) in nearest.iter_mut().zip(&pool) {
            *d = d.min(space.distance(q, &p));
        }
        nearest[i] = f64::NEG_INFINITY;
        chosen.push(p);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyphony_spec::{Dscp, KnobSpace};

    fn space() -> Space {
        let d = [Dscp::AF11, Dscp::AF21, Dscp::AF31];
        Space::new(&KnobSpace::per_class_default(&d), None).unwrap()
    }

    #[test]
    fn starts_at_the_centre_stays_in_the_region_and_spreads() {
        let s = space();
        let centre = s.point_of(&vec![0.5; s.dim()]);
        let pts = design(&s, &centre, 0.3, 10, 7);
        assert_eq!(pts.len(), 10);
        assert_eq!(pts[0], centre);
        for p in &pts {
            assert!(s.distance(p, &centre) <= 0.3 + 1e-6, "{}", s.distance(p, &centre));
        }
        // Maximin: the closest pair is far from a duplicate, and farther than a random draw's.
        let min_pair = |v: &[Vec<f64>]| {
            let mut m = f64::INFINITY;
            for i in 0..v.len() {
                for j in 0..i {
                    m = m.min(s.distance(&v[i], &v[j]));
                }
            }
            m
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let random: Vec<Vec<f64>> = sample_starts(&s, &centre, Some(0.3), 10, &mut rng)
            .iter()
            .map(|z| s.point_of(z))
            .collect();
        assert!(min_pair(&pts) > 0.05, "{}", min_pair(&pts));
        assert!(min_pair(&pts) > min_pair(&random));
        // Deterministic under the seed; another seed, another design.
        assert_eq!(design(&s, &centre, 0.3, 10, 7), pts);
        assert_ne!(design(&s, &centre, 0.3, 10, 8), pts);
        assert!(design(&s, &centre, 0.3, 0, 7).is_empty());
        assert_eq!(design(&s, &centre, 0.3, 1, 7), vec![centre]);
    }
}
