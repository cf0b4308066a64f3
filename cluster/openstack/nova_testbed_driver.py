"""The test bed's Nova virt driver: Nova's fake driver, plus servers that stay in BUILD.

A server of a flavor with the extra spec testbed:stuck_build=first-of-group, that is the first
member of its server group, never finishes building: its spawn waits until the server is
deleted, as a hypervisor that hangs would. The other servers of the group build as usual,
so that a test can show a member whose server is stuck being replaced.

Nova loads drivers from nova.virt only: cluster/openstack.sh registers this module as
nova.virt.testbed before nova-compute starts.
"""
import time

from nova import exception
from nova import objects
from nova.virt import fake

STUCK_SPEC = "testbed:stuck_build"


class TestbedDriver(fake.FakeDriver):
    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        if self._stuck(context, instance):
            # nova-compute runs under eventlet: this sleep yields to the other builds.
            while True:
                time.sleep(1)
                instance.refresh()
                if instance.task_state == "deleting":
                    raise exception.BuildAbortException(
                        instance_uuid=instance.uuid,
                        reason="deleted while stuck in BUILD (test bed)")
        super().spawn(context, instance, image_meta, injected_files,
                      admin_password, allocations, network_info=network_info,
                      block_device_info=block_device_info, power_on=power_on,
                      accel_info=accel_info)

    @staticmethod
    def _stuck(context, instance):
        if instance.flavor.extra_specs.get(STUCK_SPEC) != "first-of-group":
            return False
        try:
            group = objects.InstanceGroup.get_by_instance_uuid(context, instance.uuid)
        except exception.InstanceGroupNotFound:
            return True
        return bool(group.members) and group.members[0] == instance.uuid
