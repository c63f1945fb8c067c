//! Stepping through a fixed order that wraps around: the detail tabs, the list's state
//! filters and sort columns.

/// The item after `current` in `order` (`forward`), or the one before it, wrapping at
/// both ends; an item not in `order` counts as the first. `order` must not be empty.
pub fn step<T: Copy + PartialEq>(order: &[T], current: T, forward: bool) -> T {
    let n = order.len();
    let i = order.iter().position(|t| *t == current).unwrap_or(0);
    order[if forward {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_wrap_at_both_ends() {
        let order = ['a', 'b', 'c'];
        assert_eq!(step(&order, 'a', true), 'b');
        assert_eq!(step(&order, 'c', true), 'a');
        assert_eq!(step(&order, 'a', false), 'c');
        assert_eq!(step(&order, 'b', false), 'a');
        assert_eq!(step(&order, 'z', true), 'b', "unknown: from the first");
        assert_eq!(step(&['x'], 'x', true), 'x');
    }
}
