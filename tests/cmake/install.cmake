# The install rules: headers, library, CMake package and pkg-config file work for a consumer.
if(NOT CMAKE_CROSSCOMPILING AND NOT PG_SANITIZE)
  add_test(NAME install_find_package_and_pkg_config
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install-check)
endif()
