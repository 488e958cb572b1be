"""Why a claim cannot be allocated: the DRA allocator reproduced, device by device."""
