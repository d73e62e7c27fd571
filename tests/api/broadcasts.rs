//! `POST /admin/push`.
