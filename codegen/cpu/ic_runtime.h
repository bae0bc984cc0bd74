/// \file
/// (being written)
#pragma once
