/// \file
/// (being written)
