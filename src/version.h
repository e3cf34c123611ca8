/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef FERRY_VERSION_H
#define FERRY_VERSION_H
#define FERRY_VERSION "0.1.0"
#endif
