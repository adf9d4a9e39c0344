output "addresses" {
  description = "Node name -> {private, public}: what the inventory module takes."
  value = {
    for name, i in aws_instance.node : name => {
      private = i.private_ip
      public  = i.public_ip == "" ? null : i.public_ip
    }
  }
}

output "kafka_data_devices" {
  description = "Kafka node -> the block device of its data directory (Nitro instances show instance store and EBS alike as NVMe)."
  value       = { for name in keys(local.kafka) : name => "/dev/nvme1n1" }
}

output "security_group_id" {
  description = "The cluster's security group."
  value       = aws_security_group.cluster.id
}

output "instance_ids" {
  description = "Node name -> EC2 instance ID."
  value       = { for name, i in aws_instance.node : name => i.id }
}
