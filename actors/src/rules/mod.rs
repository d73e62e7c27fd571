//! Pure rules: plain functions over plain data, no I/O, unit tests beside them.

pub mod balance;
pub mod clock;
pub mod places;
pub mod rating;
pub mod seating;
pub mod strikes;
pub mod structure;
pub mod table_break;
#[cfg(test)]
mod test_seats;
