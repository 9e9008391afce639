//! `zot run`: references, consent, requirements, model catalog, simulator,
//! tools, sessions and output modes.
